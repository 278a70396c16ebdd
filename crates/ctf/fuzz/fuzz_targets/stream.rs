//! A real trace's metadata (chosen by the first input byte) plus arbitrary
//! bytes as its one stream file: opening, merging, decoding every event and
//! writing it as JSON must never panic and must finish quickly.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use roscope_ctf::columns::ColumnReader;
use roscope_ctf::{json, summary, TraceSet};

/// Packetized metadata files copied from ../shared/traces (see README.md).
const METADATA: &[&[u8]] = &[
    include_bytes!("../metadata/ros2-pingpong"),
    include_bytes!("../metadata/ros1-kernel"),
    include_bytes!("../metadata/ros1-ust"),
];

fn dirs() -> &'static Vec<PathBuf> {
    static D: OnceLock<Vec<PathBuf>> = OnceLock::new();
    D.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("roscope-fuzz-stream-{}", std::process::id()));
        METADATA
            .iter()
            .enumerate()
            .map(|(i, md)| {
                let d = root.join(format!("t{}", i));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("metadata"), md).unwrap();
                d
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, stream)) = data.split_first() else { return };
    let dir = &dirs()[sel as usize % METADATA.len()];
    let file = dir.join("chan_0");
    std::fs::write(&file, stream).unwrap();
    {
        let mut set = TraceSet::open(&[dir]).expect("the metadata is valid");
        let mut out = Vec::new();
        let mut cols = ColumnReader::new(None, 64);
        let mut n = 0u64;
        while let Some(i) = set.next() {
            out.clear();
            json::write_event(&mut out, &set, &set.streams[i]);
            assert!(out.ends_with(b"}}\n"));
            if cols.add(&set, i) {
                cols.take();
            }
            n += 1;
        }
        cols.take();
        // Every event needs at least one byte of the file.
        assert!(n <= stream.len() as u64, "{} events from {} bytes", n, stream.len());
        for w in set.all_warnings() {
            let _ = w.to_string();
        }
    }
    if sel & 0x80 != 0 {
        // The `info` path: a second, independent pass.
        let mut set = TraceSet::open(&[dir]).expect("the metadata is valid");
        let sum = summary::summarize(&mut set);
        let _ = summary::to_json(&set, &sum);
    }
    let _ = std::fs::remove_file(&file);
});
