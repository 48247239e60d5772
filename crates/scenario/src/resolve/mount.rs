//! `fs` and `mount` of a `[[device]]`: the file system and its mount options, over the
//! simulated release's defaults ([`MountConfig::defaults`]).

use crate::error::Result;
use crate::section::{Entry, Section};
use crate::suggest;
use wblab_sim::config::{Atime, DataMode, FsKind, MountConfig, RESERVATION_WINDOWS};
use wblab_sim::generations::{parse_version, Version};
use wblab_sim::units::KIB;
use wblab_sim::units::NSEC_PER_SEC;

/// Options every file system takes.
const VFS_OPTIONS: &[&str] = &["defaults", "rw", "noatime", "relatime", "strictatime"];
/// ext3/ext4 options the model reads.
const EXT_OPTIONS: &[&str] = &["data", "commit", "barrier", "nobarrier", "journal_async_commit"];
/// ext3 only, from 2.6.10 (reservation windows).
const EXT3_OPTIONS: &[&str] = &["reservation", "noreservation"];
/// ext4 only.
const EXT4_OPTIONS: &[&str] = &["dioread_nolock", "nodioread_nolock", "auto_da_alloc", "noauto_da_alloc"];
/// xfs options the model reads.
const XFS_OPTIONS: &[&str] = &["logbsize", "logbufs", "barrier", "nobarrier"];

/// The mount options the model reads for `fs` (names, without `=value`).
fn options_of(fs: FsKind) -> Vec<&'static str> {
    match fs {
        FsKind::Ext4 => [VFS_OPTIONS, EXT_OPTIONS, EXT4_OPTIONS].concat(),
        FsKind::Ext3 => [VFS_OPTIONS, EXT_OPTIONS, EXT3_OPTIONS].concat(),
        FsKind::Xfs => [VFS_OPTIONS, XFS_OPTIONS].concat(),
        FsKind::Btrfs => VFS_OPTIONS.to_vec(),
    }
}

/// The mount options the model reads for the file system named `fs` (`ext4`, ...; none for
/// one it does not model), so that a machine's options can be sorted before they are written.
pub fn modelled_options(fs: &str) -> Vec<&'static str> {
    [FsKind::Ext4, FsKind::Ext3, FsKind::Xfs, FsKind::Btrfs]
        .into_iter()
        .find(|k| k.name() == fs)
        .map(options_of)
        .unwrap_or_default()
}

/// The device's file system, or `None` when it has no `fs` (then `mount` and
/// `journal_size` are errors). `size` is the device's, in bytes.
pub(super) fn build(sec: &Section<'_>, kernel: &str, size: u64) -> Result<Option<MountConfig>> {
    let Some(fs_entry) = sec.get("fs") else {
        if let Some(e) = sec
            .get("mount")
            .or_else(|| sec.get("journal_size"))
            .or_else(|| sec.get("fast_commit"))
        {
            return Err(e
                .key_problem(format!("`{}` needs a file system", e.key.as_str()))
                .hint("add fs = \"ext4\" (or ext3, xfs, btrfs) to the device"));
        }
        return Ok(None);
    };
    let fs = file_system(fs_entry)?;
    let release = parse_version(kernel).unwrap_or(Version(6, 0, 0));
    let mut m = MountConfig::defaults(fs, release);
    if let Some(e) = sec.get("mount") {
        let text = e.str()?.trim().to_string();
        for opt in text.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            apply(&mut m, opt, e, release)?;
        }
        m.options = text;
    }
    if let Some(e) = sec.get("journal_size") {
        m.journal_size = Some(journal_size(e, m.fs, size)?);
    }
    if let Some(e) = sec.get("fast_commit") {
        m.fast_commit = e.boolean()?;
        if m.fast_commit && m.fs != FsKind::Ext4 {
            return Err(e
                .key_problem(format!("fast_commit is an ext4 feature, not {}'s", m.fs.name()))
                .hint("drop fast_commit, or use fs = \"ext4\""));
        }
        if m.fast_commit && m.data == DataMode::Journal {
            return Err(e
                .key_problem("ext4 does not fast-commit with data=journal".to_string())
                .hint("drop fast_commit or data=journal"));
        }
    }
    Ok(Some(m))
}

/// `journal_size`: what `mke2fs -J size=` takes — whole MiB, 1024 to 10,240,000 blocks of
/// 4 KiB, and at most half the file system.
fn journal_size(e: &Entry<'_>, fs: FsKind, device: u64) -> Result<u64> {
    if !matches!(fs, FsKind::Ext4 | FsKind::Ext3) {
        return Err(e
            .key_problem(format!("journal_size is not modelled for {}", fs.name()))
            .hint("it sets ext3/ext4's journal (mke2fs -J size=); xfs and btrfs keep mkfs's default"));
    }
    const MIB: u64 = 1 << 20;
    let bytes = e.size()?;
    if bytes % MIB != 0 {
        return Err(e
            .problem("mke2fs takes the journal size in whole MiB")
            .hint("e.g. journal_size = \"64MiB\""));
    }
    let (lo, hi) = (4 * MIB, 10_240_000 * 4096);
    if !(lo..=hi).contains(&bytes) {
        return Err(e
            .problem("a jbd2 journal holds 1024 to 10,240,000 blocks of 4 KiB")
            .hint("between \"4MiB\" and \"40000MiB\""));
    }
    if bytes > device / 2 {
        return Err(e
            .problem("the journal would take more than half of the device")
            .hint("mke2fs refuses it; make the journal smaller or the device larger"));
    }
    Ok(bytes)
}

fn file_system(e: &Entry<'_>) -> Result<FsKind> {
    let name = e.str()?.trim();
    let names: Vec<&str> = FsKind::ALL.iter().map(|f| f.name()).collect();
    match FsKind::ALL.iter().find(|f| f.name().eq_ignore_ascii_case(name)) {
        Some(&f) => Ok(f),
        None => Err(e
            .problem(format!("unknown file system `{name}`"))
            .hint(format!("{}; `wblab measure` makes one of these", suggest::hint(name, &names)))),
    }
}

/// One `mount` option.
fn apply(m: &mut MountConfig, opt: &str, e: &Entry<'_>, release: Version) -> Result<()> {
    let (key, value) = match opt.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (opt, None),
    };
    let fs = m.fs.name();
    let own = options_of(m.fs);
    if !own.contains(&key) {
        let all = [VFS_OPTIONS, EXT_OPTIONS, EXT3_OPTIONS, EXT4_OPTIONS, XFS_OPTIONS].concat();
        let hint = if all.contains(&key) {
            format!("`{key}` is not an option of {fs}; {fs} takes: {}", suggest::list(&own))
        } else {
            suggest::hint(key, &own)
        };
        return Err(e.problem(format!("mount option `{opt}` is not modelled for {fs}")).hint(hint));
    }
    let bad = |what: &str| e.problem(format!("mount option `{opt}`: {what}"));
    let flag = |v: Option<&str>| -> Result<bool> {
        match v {
            None | Some("1") => Ok(true),
            Some("0") => Ok(false),
            Some(_) => Err(bad("expected 0 or 1")),
        }
    };
    match key {
        "defaults" | "rw" => {}
        "noatime" => m.atime = Atime::Noatime,
        "relatime" => m.atime = Atime::Relatime,
        "strictatime" => m.atime = Atime::Strictatime,
        "barrier" => m.barrier = flag(value)?,
        "nobarrier" => m.barrier = false,
        "journal_async_commit" => m.journal_async_commit = true,
        "dioread_nolock" => m.dioread_nolock = true,
        "nodioread_nolock" => m.dioread_nolock = false,
        "auto_da_alloc" => m.auto_da_alloc = flag(value)?,
        "noauto_da_alloc" => m.auto_da_alloc = false,
        "reservation" | "noreservation" => {
            if release < RESERVATION_WINDOWS {
                return Err(bad("ext3 has no reservation windows before 2.6.10")
                    .hint("this release allocates at write() by the bitmap search already; drop the option"));
            }
            m.bitmap_alloc = key == "noreservation";
        }
        "data" => {
            m.data = match value {
                Some("ordered") => DataMode::Ordered,
                Some("writeback") => DataMode::Writeback,
                Some("journal") => {
                    // ext4 turns dioread_nolock (and delayed allocation) off for it.
                    m.dioread_nolock = false;
                    DataMode::Journal
                }
                _ => return Err(bad("expected data=ordered, data=writeback or data=journal")),
            }
        }
        "commit" => {
            let secs: u64 = value
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad("expected commit=<seconds>").hint("commit=5 is the default; 0 means the default"))?;
            if secs > 86_400 {
                return Err(bad("more than a day").hint("jbd2 takes seconds; 5 is the default"));
            }
            m.commit_interval = if secs == 0 { 5 } else { secs } * NSEC_PER_SEC;
        }
        "logbsize" => {
            let v = value.unwrap_or("");
            let kib: u64 = v
                .trim_end_matches(['k', 'K'])
                .parse()
                .map_err(|_| bad("expected logbsize=<16k|32k|64k|128k|256k>"))?;
            if ![16, 32, 64, 128, 256].contains(&kib) {
                return Err(bad("xfs takes 16k, 32k, 64k, 128k or 256k").hint("32k is the default"));
            }
            m.logbsize = kib * KIB;
        }
        "logbufs" => {
            let n: u32 = value.and_then(|v| v.parse().ok()).ok_or_else(|| bad("expected logbufs=<2..8>"))?;
            if !(2..=8).contains(&n) {
                return Err(bad("xfs takes 2 to 8 log buffers").hint("8 is the default"));
            }
        }
        _ => unreachable!("checked against the option lists"),
    }
    Ok(())
}
