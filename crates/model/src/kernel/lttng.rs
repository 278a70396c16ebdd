//! LTTng kernel traces: their sched events (`sched_switch`, `sched_wakeup`,
//! `sched_wakeup_new`, and the renames `sched_process_exec`, `task_rename`)
//! read with roscope's CTF reader in time order; events of one time in the
//! order switches, wake-ups, new tasks' wake-ups, renames (each kind in the
//! reader's order). A task is runnable after a switch when its `prev_state`
//! has no task-state bit set (`prev_state & 0xff == 0`: TASK_RUNNING, maybe
//! with the preemption mark). After an exec a task is named after the file's
//! base name, cut to 15 characters.

use roscope_ctf::stream::{StreamReader, Val};
use roscope_ctf::summary::static_index;
use roscope_ctf::TraceSet;

use super::{Kind, RawEvent};

#[derive(Clone, Copy)]
enum Ev {
    Switch,
    Wakeup,
    WakeupNew,
    Exec,
    Rename,
}

impl Ev {
    fn of(name: &str) -> Option<Ev> {
        match name.rsplit(':').next()? {
            "sched_switch" => Some(Ev::Switch),
            "sched_wakeup" => Some(Ev::Wakeup),
            "sched_wakeup_new" => Some(Ev::WakeupNew),
            "sched_process_exec" => Some(Ev::Exec),
            "task_rename" => Some(Ev::Rename),
            _ => None,
        }
    }

    fn rank(self) -> u8 {
        match self {
            Ev::Switch => 0,
            Ev::Wakeup => 1,
            Ev::WakeupNew => 2,
            Ev::Exec | Ev::Rename => 3,
        }
    }

    /// The payload fields read, in order.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Ev::Switch => &["prev_comm", "prev_tid", "prev_state", "next_comm", "next_tid"],
            Ev::Wakeup | Ev::WakeupNew => &["comm", "tid", "target_cpu"],
            Ev::Exec => &["filename", "tid"],
            Ev::Rename => &["newcomm", "pid"],
        }
    }
}

/// One event read, waiting for the others of its time.
struct Got {
    ts: u64,
    rank: u8,
    cpu: i64,
    kind: Kind,
    cur_pid: Option<i64>,
    ints: [i64; 3],
    texts: [Vec<u8>; 2],
}

fn int(s: &StreamReader, i: Option<usize>) -> Option<i64> {
    match s.tape.get(s.payload_start + i?)? {
        Val::U(x) => Some(*x as i64),
        Val::I(x) => Some(*x),
        _ => None,
    }
}

fn text(s: &StreamReader, i: Option<usize>) -> Vec<u8> {
    match i.and_then(|i| s.tape.get(s.payload_start + i)) {
        Some(Val::Str(off, len)) => roscope_ctf::json::bytes_at(s.data(), *off, *len).to_vec(),
        _ => Vec::new(),
    }
}

/// The name exec gives: the file's base name, at most 15 characters.
fn exec_name(filename: &[u8]) -> Vec<u8> {
    let base = match filename.iter().rposition(|&c| c == b'/') {
        Some(i) => &filename[i + 1..],
        None => filename,
    };
    String::from_utf8_lossy(base).chars().take(15).collect::<String>().into_bytes()
}

/// Reads the sched events of the LTTng kernel trace(s) under `dir` and hands
/// them to `sink` in time order, their times mapped by `map`. Returns how many.
pub fn read_lttng(dir: &str, map: &dyn Fn(i64) -> i64, sink: &mut dyn FnMut(&RawEvent)) -> Result<u64, String> {
    let mut set = TraceSet::open(&[dir]).map_err(|e| e.to_string())?;
    // Per trace, per event class: what it is and where its fields are.
    type ClassInfo = Option<(Ev, Vec<Option<usize>>)>;
    let classes: Vec<Vec<ClassInfo>> = set
        .traces
        .iter()
        .map(|t| {
            t.md.events
                .iter()
                .map(|ec| {
                    let ev = Ev::of(&ec.name)?;
                    Some((ev, ev.fields().iter().map(|f| static_index(ec.payload.as_ref(), &[f])).collect()))
                })
                .collect()
        })
        .collect();
    let pid_at: Vec<Vec<Option<usize>>> =
        set.traces.iter().map(|t| t.md.streams.iter().map(|sc| static_index(sc.event_context.as_ref(), &["pid"])).collect()).collect();
    let mut group: Vec<Got> = Vec::new();
    let mut n = 0u64;
    let emit = |group: &mut Vec<Got>, sink: &mut dyn FnMut(&RawEvent)| {
        group.sort_by_key(|g| g.rank);
        for g in group.drain(..) {
            let ts = map(g.ts as i64);
            let ev = match g.kind {
                Kind::Switch => RawEvent::switch(ts, g.cpu, g.cur_pid, (g.ints[0], g.ints[1] != 0, &g.texts[0]), (g.ints[2], &g.texts[1])),
                k => RawEvent::task(ts, g.cpu, k, g.ints[0], (k != Kind::Rename).then_some(g.ints[1]), &g.texts[0]),
            };
            sink(&ev);
        }
    };
    while let Some(i) = set.next() {
        let s = &set.streams[i];
        let Some((ev, at)) = &classes[s.trace][s.cur_class] else { continue };
        let cpu = s.packet_fields.iter().find(|(k, _)| k == "cpu_id").map_or(0, |(_, v)| *v as i64);
        let got = match ev {
            Ev::Switch => {
                let state = int(s, at[2]).unwrap_or(0);
                Got {
                    ts: s.cur_ts,
                    rank: ev.rank(),
                    cpu,
                    kind: Kind::Switch,
                    cur_pid: pid_at[s.trace][s.sc].and_then(|p| match s.tape.get(p)? {
                        Val::U(x) => Some(*x as i64),
                        Val::I(x) => Some(*x),
                        _ => None,
                    }),
                    ints: [int(s, at[1]).unwrap_or(0), (state & 0xff == 0) as i64, int(s, at[4]).unwrap_or(0)],
                    texts: [text(s, at[0]), text(s, at[3])],
                }
            }
            Ev::Wakeup | Ev::WakeupNew => Got {
                ts: s.cur_ts,
                rank: ev.rank(),
                cpu,
                kind: if matches!(ev, Ev::Wakeup) { Kind::Wakeup } else { Kind::WakeupNew },
                cur_pid: None,
                ints: [int(s, at[1]).unwrap_or(0), int(s, at[2]).unwrap_or(-1), 0],
                texts: [text(s, at[0]), Vec::new()],
            },
            Ev::Exec | Ev::Rename => {
                let name = if matches!(ev, Ev::Exec) { exec_name(&text(s, at[0])) } else { text(s, at[0]) };
                Got {
                    ts: s.cur_ts,
                    rank: ev.rank(),
                    cpu,
                    kind: Kind::Rename,
                    cur_pid: None,
                    ints: [int(s, at[1]).unwrap_or(0), 0, 0],
                    texts: [name, Vec::new()],
                }
            }
        };
        if group.first().is_some_and(|g| g.ts != got.ts) {
            emit(&mut group, sink);
        }
        group.push(got);
        n += 1;
    }
    emit(&mut group, sink);
    Ok(n)
}
