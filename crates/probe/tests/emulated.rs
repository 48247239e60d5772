//! An emulated device against its own model on the real kernel: O_DIRECT reads through the
//! loop device see the model's latency. Needs root, /dev/fuse and /dev/loop-control; runs
//! only when asked (`scripts/test --real-kernel`), like every test that changes the machine.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;
use wblab_emulate::{AlignedBuf, EmulatedDevice, Options};
use wblab_probe::journal::{self, Entry, Journal};
use wblab_probe::{leaks, loopdev};

fn can_run() -> bool {
    if std::env::var_os("WBLAB_REAL_KERNEL").is_none_or(|v| v != "1") {
        eprintln!("\n*** SKIPPED: real-kernel tests run only when asked (scripts/test --real-kernel) ***\n");
        return false;
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && Path::new("/dev/fuse").exists() && Path::new("/dev/loop-control").exists();
    if !ok {
        eprintln!("\n*** SKIPPED: emulated devices need root, /dev/fuse and /dev/loop-control (root: {root}) ***\n");
    }
    ok
}

/// Mean latency of `n` random 4 KiB O_DIRECT reads of `kind`'s emulated device, as timed
/// around each pread and as the model served them, ns.
fn random_reads(kind: &str, n: u32) -> (f64, f64) {
    let mut j = Journal::begin().expect("the measurement lock");
    let name = format!("wblab-measure-emulated-{kind}-{}", std::process::id());
    let scratch = journal::make_scratch(&mut j, &std::env::temp_dir(), &name).expect("scratch");
    let mount = scratch.join("emulated");
    std::fs::create_dir(&mount).unwrap();
    j.record(Entry::Mount { path: mount.clone() }).unwrap();
    let model = (wblab_sim::drivers::model::model_info(kind).expect("a model").default)();
    let dev = EmulatedDevice::start(&Options {
        model,
        size: 8 << 30,
        name: "sda".into(),
        seed: 7,
        chance: true,
        image: scratch.join("sda.img"),
        mountpoint: mount.clone(),
        log: None,
    })
    .expect("serve the model");
    let timed = (|| {
        let ld = loopdev::add_fresh(&mut j)?;
        assert!(loopdev::attach(&mut j, &ld, &dev.disk())?, "the loop device does direct I/O");
        let t = wblab_emulate::calibrate(&dev, &ld.dev_path())?;
        eprintln!("{kind}: transport {t:?}");
        let f = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(ld.dev_path())?;
        let mut buf = AlignedBuf::new(4096);
        // Spread over the first GiB, from a fixed sequence (a 64-bit LCG).
        let (mut x, mut total) = (0x9e37_79b9_7f4a_7c15u64, 0u128);
        for _ in 0..n {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let at = (x >> 33) % (1 << 18) * 4096;
            let t0 = Instant::now();
            f.read_exact_at(buf.as_mut_slice(), at)?;
            total += t0.elapsed().as_nanos();
        }
        std::io::Result::Ok(total as f64 / f64::from(n))
    })();
    let st = dev.stats();
    let problems = j.teardown();
    drop(dev);
    assert!(problems.is_empty(), "tear-down: {problems:?}");
    assert!(!mount.exists(), "the scratch directory and its mount point are gone");
    let measured = timed.expect("timed reads");
    assert_eq!(st.read.requests, u64::from(n), "every read reached the model once: {st:?}");
    (measured, st.read.model_ns as f64 / st.read.requests as f64)
}

#[test]
fn direct_reads_see_the_models_latency() {
    if !can_run() {
        return;
    }
    let _machine = leaks::serial_lock();
    // About a second each: a disk's seeks, a USB key's reads, an SSD's.
    for (kind, n) in [("hdd", 200), ("usb", 800), ("ssd", 8000)] {
        let (measured, model) = random_reads(kind, n);
        let ratio = measured / model;
        eprintln!(
            "{kind}: {n} reads, mean {:.1} us through the kernel, {:.1} us in the model ({ratio:.3})",
            measured / 1e3,
            model / 1e3
        );
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{kind}: the kernel saw {ratio:.3}x the model's latency"
        );
    }
}
