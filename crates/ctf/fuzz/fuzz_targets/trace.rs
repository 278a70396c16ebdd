//! A whole trace from the fuzzer: metadata and one stream file, both
//! arbitrary. Input: u16 (LE) metadata length, the metadata (text or
//! packetized), then the stream file. Reading everything must never panic
//! and must finish quickly, whatever the metadata declares (zero-size
//! events, huge arrays of empty structures, deep nesting...).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use roscope_ctf::{json, TraceSet};

fn dir() -> &'static PathBuf {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("roscope-fuzz-trace-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let n = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (md, stream) = data[2..].split_at(n);
    let d = dir();
    std::fs::write(d.join("metadata"), md).unwrap();
    std::fs::write(d.join("chan_0"), stream).unwrap();
    if let Ok(mut set) = TraceSet::open(&[d]) {
        let mut out = Vec::new();
        let mut events = 0u64;
        while let Some(i) = set.next() {
            out.clear();
            json::write_event(&mut out, &set, &set.streams[i]);
            events += 1;
            // Every event needs at least one bit of the stream file.
            assert!(events <= 8 * stream.len() as u64, "{} events from {} bytes", events, stream.len());
        }
        let _ = set.losses();
        for w in set.all_warnings() {
            let _ = w.to_string();
        }
    }
});
