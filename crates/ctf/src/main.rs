//! `roscope-ctf`: the CTF reader without Python, for benchmarks and debugging.
//!
//!   roscope-ctf count TRACE...   decode every event, print the count and time
//!   roscope-ctf dump TRACE...    every event as a JSON line (docs/dump-format.md)
//!   roscope-ctf info TRACE...    the summary as JSON

use std::io::Write;
use std::time::Instant;

use roscope_ctf::{json, summary, TraceSet};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: roscope-ctf count|dump|info TRACE...");
        std::process::exit(2);
    }
    let paths = &args[2..];
    let mut set = match TraceSet::open(paths) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("roscope-ctf: error: {}", e);
            std::process::exit(1);
        }
    };
    let t0 = Instant::now();
    match args[1].as_str() {
        "count" => {
            let mut n = 0u64;
            while set.next().is_some() {
                n += 1;
            }
            let dt = t0.elapsed().as_secs_f64();
            println!("{} events in {:.3} s ({:.0} events/s)", n, dt, n as f64 / dt);
        }
        "dump" => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            let mut buf = Vec::with_capacity(1 << 20);
            while let Some(i) = set.next() {
                json::write_event(&mut buf, &set, &set.streams[i]);
                if buf.len() > (1 << 20) - 4096 {
                    if lock.write_all(&buf).is_err() {
                        return;
                    }
                    buf.clear();
                }
            }
            let _ = lock.write_all(&buf);
        }
        "info" => {
            let sum = summary::summarize(&mut set);
            println!("{}", summary::to_json(&set, &sum));
        }
        other => {
            eprintln!("roscope-ctf: unknown command '{}'", other);
            std::process::exit(2);
        }
    }
    for w in set.all_warnings() {
        eprintln!("roscope-ctf: warning: {}", w);
    }
}
