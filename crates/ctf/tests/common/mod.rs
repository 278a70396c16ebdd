//! Helpers shared by the integration tests: hand-made traces in temporary
//! directories (`roscope_ctf::testing`, feature `testing`), and a reader that
//! collects what roscope-ctf makes of them.
#![allow(dead_code)]

use std::path::Path;

use roscope_ctf::{json, TraceSet};

pub use roscope_ctf::testing::*;

/// What roscope-ctf makes of a trace directory.
pub struct Dump {
    pub lines: Vec<String>,
    pub ts: Vec<u64>,
    pub names: Vec<String>,
    pub warnings: Vec<String>,
    pub loss: Vec<roscope_ctf::reader::StreamLoss>,
    pub packets: Vec<u64>,
}

impl Dump {
    /// The `"payload":{...}` object of each event, as JSON text.
    pub fn payloads(&self) -> Vec<String> {
        self.lines.iter().map(|l| json_member(l, "payload")).collect()
    }
    pub fn contexts(&self) -> Vec<String> {
        self.lines.iter().map(|l| json_member(l, "context")).collect()
    }
}

/// The value of a top-level member of a JSON line, assuming it is an object
/// (brace matching that skips strings).
pub fn json_member(line: &str, key: &str) -> String {
    let pat = format!("\"{}\":", key);
    let start = line.find(&pat).unwrap_or_else(|| panic!("no {} in {}", key, line)) + pat.len();
    let b = line.as_bytes();
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    for (i, &c) in b.iter().enumerate().skip(start) {
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return line[start..=i].to_string();
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced JSON: {}", line)
}

pub fn dump(dir: &Path) -> Dump {
    let mut set = TraceSet::open(&[dir]).unwrap_or_else(|e| panic!("open {}: {}", dir.display(), e));
    let mut d = Dump { lines: vec![], ts: vec![], names: vec![], warnings: vec![], loss: vec![], packets: vec![] };
    let mut buf = Vec::new();
    while let Some(i) = set.next() {
        buf.clear();
        json::write_event(&mut buf, &set, &set.streams[i]);
        let s = &set.streams[i];
        d.ts.push(s.cur_ts);
        d.names.push(set.traces[s.trace].md.events[s.cur_class].name.clone());
        d.lines.push(String::from_utf8(buf.clone()).unwrap().trim_end().to_string());
    }
    d.warnings = set.all_warnings().iter().map(|w| w.to_string()).collect();
    d.loss = set.losses();
    d.packets = set.streams.iter().map(|s| s.packets).collect();
    d
}
