//! The streamed thread states on small hand-made event sequences; every
//! expected row is worked out by hand from docs/analyses.md's definitions.

use super::*;
use crate::table::Data;

fn sw(ts: i64, cpu: i64, prev: (i64, bool, &'static str), next: (i64, &'static str)) -> RawEvent<'static> {
    RawEvent::switch(ts, cpu, Some(prev.0 + 1000), (prev.0, prev.1, prev.2.as_bytes()), (next.0, next.1.as_bytes()))
}

fn task(ts: i64, kind: Kind, tid: i64, comm: &'static str) -> RawEvent<'static> {
    RawEvent::task(ts, 0, kind, tid, (kind != Kind::Rename).then_some(0), comm.as_bytes())
}

fn ints(t: &Table, col: &str) -> Vec<Option<i64>> {
    let c = t.cols.iter().find(|c| c.name == col).expect("column");
    match &c.data {
        Data::I64(v) => v.iter().enumerate().map(|(i, x)| (!c.any_null || c.valid[i] != 0).then_some(*x)).collect(),
        _ => panic!("not ints"),
    }
}

fn strs(t: &Table, col: &str) -> Vec<Option<String>> {
    let c = t.cols.iter().find(|c| c.name == col).expect("column");
    match &c.data {
        Data::Str(b, o) => (0..o.len() - 1)
            .map(|i| (!c.any_null || c.valid[i] != 0).then(|| String::from_utf8_lossy(&b[o[i] as usize..o[i + 1] as usize]).into_owned()))
            .collect(),
        _ => panic!("not text"),
    }
}

/// Runs the events through a builder; returns its tables by name (chunks concatenated
/// in order: small inputs give one chunk each).
fn build(events: &[RawEvent]) -> FxHashMap<&'static str, Table> {
    let mut b = KernelBuilder::new();
    for e in events {
        b.add(7, e);
    }
    b.finish().into_iter().map(|t| (t.name, t)).collect()
}

/// (tid, state, name, cpu, start, end) of every interval, by thread and start.
fn states(t: &FxHashMap<&'static str, Table>) -> Vec<(i64, String, String, Option<i64>, i64, i64)> {
    let Some(s) = t.get(STATES_TABLE) else { return vec![] };
    let (tid, st, name, cpu, a, z) =
        (ints(s, "tid"), strs(s, "state"), strs(s, "name"), ints(s, "cpu"), ints(s, "start_ts"), ints(s, "end_ts"));
    let mut v: Vec<_> = (0..s.rows)
        .map(|i| (tid[i].unwrap(), st[i].clone().unwrap(), name[i].clone().unwrap_or_default(), cpu[i], a[i].unwrap(), z[i].unwrap()))
        .collect();
    v.sort_by_key(|r| (r.0, r.4));
    v
}

fn row(tid: i64, st: &str, name: &str, cpu: Option<i64>, a: i64, z: i64) -> (i64, String, String, Option<i64>, i64, i64) {
    (tid, st.to_string(), name.to_string(), cpu, a, z)
}

#[test]
fn switches_wakeups_and_a_preemption() {
    let t = build(&[
        sw(10, 0, (0, false, "swapper"), (1, "a")),
        task(20, Kind::Wakeup, 2, "b"), // b's state is not known yet: no interval
        sw(30, 0, (1, true, "a"), (2, "b")),
        sw(40, 0, (2, false, "b"), (1, "a")),
        task(50, Kind::Wakeup, 2, "b"),
    ]);
    assert_eq!(
        states(&t),
        vec![
            row(1, "running", "a", Some(0), 10, 30),
            row(1, "runnable", "a", Some(0), 30, 40),
            row(1, "running", "a", Some(0), 40, 50),
            row(2, "running", "b", Some(0), 30, 40),
            row(2, "blocked", "b", None, 40, 50),
        ]
    );
    let p = &t[PREEMPTIONS_TABLE];
    assert_eq!(
        (ints(p, "ts"), ints(p, "tid"), ints(p, "pid"), ints(p, "by_tid")),
        (vec![Some(30)], vec![Some(1)], vec![Some(1001)], vec![Some(2)])
    );
    // b's pid is known only from its own switch-out (at 40): its preemption row said none, so it is rewritten.
    let th = &t[THREADS_TABLE];
    assert_eq!(ints(th, "tid"), vec![Some(0), Some(1), Some(2)][1..].to_vec());
    assert_eq!(ints(th, "pid"), vec![Some(1001), Some(1002)]);
    assert_eq!(ints(th, "rewrite"), vec![Some(0), Some(1)]);
}

#[test]
fn a_missed_switch_runs_the_thread_switched_out_since_the_cpus_previous_switch() {
    // CPU 0 switched `w` in at 10; at 20 a switch names `y` as switched out: perf missed
    // y's switch-in. y ran from max(CPU's previous switch 10, y's own last event 15);
    // w is unknown from then, until w's own next event (running on CPU 1 at 17).
    let t = build(&[
        sw(10, 0, (0, false, "swapper"), (5, "w")),
        task(15, Kind::Wakeup, 6, "y"),
        sw(17, 1, (0, false, "swapper"), (5, "w")),
        sw(20, 0, (6, false, "y"), (0, "swapper")),
        task(30, Kind::Wakeup, 9, "z"),
    ]);
    assert_eq!(
        states(&t),
        vec![
            row(5, "running", "w", Some(0), 10, 15),
            row(5, "running", "w", Some(1), 17, 30),
            row(6, "running", "y", Some(0), 15, 20),
            row(6, "blocked", "y", None, 20, 30),
        ]
    );
}

#[test]
fn a_late_unknown_row_lands_before_rows_that_came_earlier() {
    // w is switched in on CPU 0 at 10 and on CPU 1 at 12 (the same state: one interval);
    // at 20 a switch on CPU 0 names y (never seen before: it ran since 10) as switched
    // out, so w is unknown from 10: its interval from 10 has length 0, and the one from
    // 12 on CPU 1 only starts after that unknown row, whatever order they came in.
    let t = build(&[
        sw(10, 0, (0, false, "swapper"), (5, "w")),
        sw(12, 1, (0, false, "swapper"), (5, "w")),
        sw(20, 0, (6, false, "y"), (0, "swapper")),
    ]);
    assert_eq!(states(&t), vec![row(5, "running", "w", Some(1), 12, 20), row(6, "running", "y", Some(0), 10, 20)]);
    assert!(!t.contains_key(MIGRATIONS_TABLE), "w's only running interval after the unknown one: no migration");
}

#[test]
fn renames_start_intervals_with_the_new_name_in_the_same_state() {
    let t = build(&[
        sw(10, 0, (0, false, "swapper"), (3, "bash")),
        task(20, Kind::Rename, 3, "python3"),
        task(30, Kind::Rename, 3, "cpuhog"),
        sw(40, 0, (3, true, "cpuhog"), (0, "swapper")),
        task(50, Kind::Wakeup, 9, "z"),
    ]);
    assert_eq!(
        states(&t),
        vec![
            row(3, "running", "bash", Some(0), 10, 20),
            row(3, "running", "python3", Some(0), 20, 30),
            row(3, "running", "cpuhog", Some(0), 30, 40),
            row(3, "runnable", "cpuhog", Some(0), 40, 50),
        ]
    );
    let th = &t[THREADS_TABLE];
    assert_eq!(strs(th, "name")[0].as_deref(), Some("cpuhog"));
}

#[test]
fn a_new_task_is_runnable_from_its_wakeup_and_a_clock_map_rounds_half_to_even() {
    let t = build(&[task(5, Kind::WakeupNew, 4, "new"), sw(9, 1, (0, false, "swapper"), (4, "new")), task(11, Kind::Wakeup, 8, "x")]);
    assert_eq!(states(&t), vec![row(4, "runnable", "new", Some(1), 5, 9), row(4, "running", "new", Some(1), 9, 11)]);
    let m = KernelClockMap { x0: 100, ref_at_x0: 1_000, slope: 0.5 };
    assert_eq!((m.apply(101), m.apply(103), m.apply(100)), (1_000, 1_002, 1_000));
}
