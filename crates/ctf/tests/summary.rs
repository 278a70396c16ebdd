//! `summarize` reads streams in parallel: it must give what one worker gives,
//! which is what the time-ordered pass gave (first events, process names and
//! times, counts), whatever the split.

use roscope_ctf::summary::{summarize_with, to_json};
use roscope_ctf::testing::{Ctx, FieldType, TempDir, TraceWriter, Value};
use roscope_ctf::TraceSet;

/// Three one-stream traces of one host; a process appears in two of them
/// and is renamed, and each class's first event is in a different stream.
fn traces(root: &TempDir) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![];
    for (k, (first, name)) in [(30u64, "late"), (10, "early"), (20, "middle")].into_iter().enumerate() {
        let mut w = TraceWriter::new("host");
        w.class("app:a", &[("x", FieldType::U64)]);
        w.class("app:b", &[("x", FieldType::U64)]);
        let p = Ctx { pid: 7, tid: 7 + k as i32, procname: name };
        let q = Ctx { pid: 100 + k as i32, tid: 100 + k as i32, procname: "other" };
        for i in 0..50u64 {
            w.event(first + 10 * i, p, if i % 3 == 0 { "app:a" } else { "app:b" }, &[Value::U(i + 1000 * k as u64)]);
            w.event(first + 10 * i + 1, q, "app:b", &[Value::U(i)]);
        }
        let dir = root.path().join(format!("t{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        w.write(&dir);
        dirs.push(dir);
    }
    dirs
}

#[test]
fn any_number_of_workers_gives_the_same_summary() {
    let root = TempDir::new("summary-par");
    let dirs = traces(&root);
    let json = |workers: usize| {
        let mut set = TraceSet::open(&dirs).unwrap();
        assert_eq!(set.streams.len(), 3);
        let sum = summarize_with(&mut set, workers);
        to_json(&set, &sum)
    };
    let one = json(1);
    for workers in [2, 3, 8] {
        assert_eq!(json(workers), one, "{workers} workers");
    }
    // What the time-ordered pass gives, by hand: 300 events; pid 7's name is
    // the one of its latest event (trace t0, "late", ends at 30 + 490).
    let mut set = TraceSet::open(&dirs).unwrap();
    let sum = summarize_with(&mut set, 2);
    assert_eq!(sum.events, 300);
    let p7: Vec<_> = sum.processes.iter().filter(|p| p.vpid == 7).collect();
    assert_eq!(p7.len(), 3, "one per trace");
    let names: Vec<&str> = p7.iter().map(|p| p.procname.as_str()).collect();
    assert!(names.contains(&"late") && names.contains(&"early") && names.contains(&"middle"));
    assert!(one.contains("\"ts\":10"), "the earliest app:a event (ts 10, trace t1) is the first one shown");
}
