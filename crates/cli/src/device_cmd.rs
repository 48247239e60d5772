//! `wblab device [MODEL]`: the device models, and for one its parameters (defaults, kinds and
//! docs as the model declares them), its queue as the driver sets it up, and the datasheet
//! figures measured on the model.

use std::process::ExitCode;
use wblab_sim::config::{default_queue, DeviceConfig, DeviceModelConfig};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::drivers::MODELS;

pub fn device(model: Option<&str>, json: bool) -> ExitCode {
    let Some(kind) = model else {
        println!("device models (`model = \"...\"` in a [[device]]; `wblab device MODEL` for one):\n");
        for m in MODELS {
            println!("  {:<8} {}", m.kind, m.summary);
        }
        return ExitCode::SUCCESS;
    };
    let Some(cfg) = default_device(kind) else {
        let kinds: Vec<&str> = MODELS.iter().map(|m| m.kind).collect();
        eprintln!("error: unknown device model `{kind}`\n  hint: known models: {}", kinds.join(", "));
        return ExitCode::from(2);
    };
    let f = characterize(&cfg);
    if json {
        let v = serde_json::json!({ "model": kind, "params": cfg.model, "queue": cfg.queue, "figures": f });
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return ExitCode::SUCCESS;
    }
    let info = cfg.model.info();
    println!("device model `{kind}`: {}\n", info.summary);
    println!("parameters (defaults; set them in the [[device]] table):");
    for spec in (info.knobs)() {
        let v = cfg.model.get_knob(spec.key).expect("a listed knob");
        println!("  {:<24} {:<14} {}", spec.key, spec.kind.show(v), spec.doc);
    }
    if let Some(member) = cfg.model.member() {
        println!(
            "  {:<24} {:<14} the members' model, with its own parameters in the same table",
            "member_model",
            format!("\"{}\"", member.kind())
        );
    }
    let q = &cfg.queue;
    println!(
        "\nqueue at probe time: scheduler {}, nr_requests {}, max_sectors_kb {}, read_ahead_kb {}, wbt_lat_usec {}, rotational {}, write cache {}",
        q.scheduler.name(),
        q.nr_requests,
        q.max_sectors_kb,
        q.read_ahead_kb,
        q.wbt_lat_usec,
        u8::from(q.rotational),
        if q.write_cache { "write back" } else { "write through" }
    );
    println!("\nmeasured on the model (capacity {}):", wblab_sim::units::format_size(cfg.size));
    println!("  sequential write            {:>9.1} MB/s", f.seq_write_mb_s);
    println!("  write burst (cache)         {:>9.1} MB/s", f.write_burst_mb_s);
    println!("  sequential read (outer)     {:>9.1} MB/s", f.seq_read_mb_s);
    println!("  sequential read (inner)     {:>9.1} MB/s", f.seq_read_inner_mb_s);
    println!(
        "  4 KiB random reads, QD 1    {:>9.0} IOPS ({:.2} ms)",
        f.rand_read_iops_qd1, f.rand_read_latency_ms_qd1
    );
    println!(
        "  4 KiB random reads, QD 32   {:>9.0} IOPS ({:.2} ms)",
        f.rand_read_iops_qd32, f.rand_read_latency_ms_qd32
    );
    println!("  4 KiB random writes, QD 1   {:>9.0} IOPS", f.rand_write_iops_qd1);
    ExitCode::SUCCESS
}

/// The first device of model `kind` as a scenario gets it when it sets nothing but the model.
pub fn default_device(kind: &str) -> Option<DeviceConfig> {
    let m = DeviceModelConfig::default_of(kind)?;
    let (name, major, minor) = m.info().naming.node(0);
    Some(DeviceConfig {
        name,
        major,
        minor,
        size: m.default_size(),
        queue: default_queue(&m),
        model: m,
        bdi: Default::default(),
        fs: None,
        throttle: Default::default(),
        used_pct: 0,
        writeout_share_pct: 0,
        emulate: false,
    })
}
