//! Quick look at a run: `cargo run --release -p wblab-sim --example quick -- N SECONDS [ssd]`.
use wblab_sim::config::*;
use wblab_sim::units::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: u32 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(4);
    let secs: u64 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    let ssd = a.get(3).is_some_and(|s| s == "ssd");
    let model = if ssd {
        DeviceModelConfig::Ssd(SsdParams::default())
    } else {
        DeviceModelConfig::Hdd(HddParams::default())
    };
    let mem = if ssd { 64 * GIB } else { 4 * GIB };
    let mut sc = Scenario::one_device("quick", model, mem, if ssd { 8 } else { 2 }, secs * 1_000_000_000);
    sc.add_task(
        "dd",
        n,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: None,
            fsync: false,
            direct: false,
        },
    );
    if a.get(4).is_some_and(|s| s == "cat") {
        sc.add_task(
            "cat",
            1,
            10_000_000_000,
            JobConfig::Cat {
                bs: 128 * KIB,
                file_size: GIB,
            },
        );
    }
    let t0 = std::time::Instant::now();
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let wall = t0.elapsed().as_secs_f64();
    println!("events {} wall {:.3}s trace {}", r.events, wall, r.trace.len());
    for t in r.tasks.iter().take(12) {
        let s = t.pauses.summary();
        let o = t.op_latency.summary();
        println!(
            "{} {} w {} MB r {} MB thr {:.1} steady {:.1} pauses n={} p50={:.1}ms p99={:.1}ms max={:.1}ms op p50={:.2}ms max={:.1}ms",
            t.name,
            t.instance,
            t.bytes_written / 1_000_000,
            t.bytes_read / 1_000_000,
            t.throughput_mb_s(),
            t.steady_mb_s(),
            s.count,
            s.p50 as f64 / 1e6,
            s.p99 as f64 / 1e6,
            s.max as f64 / 1e6,
            o.p50 as f64 / 1e6,
            o.max as f64 / 1e6
        );
    }
    for d in &r.devices {
        println!(
            "{} written {} MB read {} MB util {:.2}",
            d.name,
            d.bytes_written / 1_000_000,
            d.bytes_read / 1_000_000,
            d.util
        );
    }
    for v in r.vmstat.iter().step_by(5) {
        println!(
            "t={} dirty={} wb={} free={} thresh={} bg={} bo={}",
            v.t_ns / 1_000_000_000,
            v.nr_dirty,
            v.nr_writeback,
            v.nr_free,
            v.dirty_thresh,
            v.dirty_background_thresh,
            v.bo_kb
        );
    }
    if let Some(th) = r.throttle.last() {
        println!("last throttle: {:?}", th);
    }
}
