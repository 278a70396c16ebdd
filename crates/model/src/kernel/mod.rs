//! Kernel scheduling, streamed: per-thread scheduling states, preemptions,
//! migrations and thread names from the kernel's sched events (perf.data,
//! `perf.rs`; LTTng kernel traces, `lttng.rs`; or events handed over in
//! batches), in one pass, holding per thread and per CPU only what is still
//! open (python/roscope/kernel.py stores the results and joins the processes).
//!
//! The definitions are those of docs/analyses.md ("Thread states"): per
//! thread, its state changes ordered by (time, event order, place in the
//! event), where a switch-out that names another thread than the one last
//! switched in on that CPU (the recorder missed a switch) adds, at `ran_from`
//! (the CPU's previous switch, or the thread's own previous event if later),
//! a running row for the thread switched out and an unknown row for the one
//! switched in before. Such rows land in the past, so a thread's rows are
//! held until no later event can place one before them: a row of thread T at
//! time t is final once t <= T's last event that is not a rename (a missed
//! switch places T's own row no earlier) and t <= the last switch time of every
//! CPU that T was last switched in on (where an unknown row for T could land).

mod lttng;
mod perf;

pub use lttng::read_lttng;
pub use perf::{read_perf, PerfError, PerfFacts};

use rustc_hash::FxHashMap;

use crate::schema::ThreadState;
use crate::table::Table;

/// What a sched event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Switch,
    Wakeup,
    WakeupNew,
    /// A task's new name (exec, prctl(PR_SET_NAME), task_rename).
    Rename,
}

/// One sched event, as a reader hands it over (names as the kernel's bytes).
#[derive(Clone, Copy, Debug)]
pub struct RawEvent<'a> {
    pub ts: i64,
    pub cpu: i64,
    pub kind: Kind,
    /// The task current on the CPU (perf's sample pid; LTTng's `pid` context).
    pub cur_pid: Option<i64>,
    pub prev_tid: i64,
    pub prev_runnable: bool,
    pub prev_comm: &'a [u8],
    pub next_tid: i64,
    pub next_comm: &'a [u8],
    /// Wake-up or rename: the task, the CPU it is woken on, its name.
    pub tid: i64,
    pub target_cpu: Option<i64>,
    pub comm: &'a [u8],
}

impl<'a> RawEvent<'a> {
    pub fn switch(ts: i64, cpu: i64, cur_pid: Option<i64>, prev: (i64, bool, &'a [u8]), next: (i64, &'a [u8])) -> Self {
        RawEvent {
            ts,
            cpu,
            kind: Kind::Switch,
            cur_pid,
            prev_tid: prev.0,
            prev_runnable: prev.1,
            prev_comm: prev.2,
            next_tid: next.0,
            next_comm: next.1,
            tid: 0,
            target_cpu: None,
            comm: &[],
        }
    }

    pub fn task(ts: i64, cpu: i64, kind: Kind, tid: i64, target_cpu: Option<i64>, comm: &'a [u8]) -> Self {
        RawEvent {
            ts,
            cpu,
            kind,
            cur_pid: None,
            prev_tid: 0,
            prev_runnable: false,
            prev_comm: &[],
            next_tid: 0,
            next_comm: &[],
            tid,
            target_cpu,
            comm,
        }
    }
}

/// A host's clock map onto the reference host's, as the kernel tables apply
/// it: `t_ref = ref_at_x0 + round_half_even((t - x0) * slope)`.
#[derive(Clone, Copy, Debug)]
pub struct KernelClockMap {
    pub x0: i64,
    pub ref_at_x0: i64,
    pub slope: f64,
}

impl KernelClockMap {
    pub fn apply(&self, t: i64) -> i64 {
        let rel = t.wrapping_sub(self.x0) as f64;
        ((rel * self.slope).round_ties_even() as i64).wrapping_add(self.ref_at_x0)
    }
}

/// Per-thread row states: the thread states, plus what only a row can say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Running,
    Runnable,
    Blocked,
    Unknown,
    Wakeup,
    WakeupNew,
    Rename,
}

impl St {
    fn code(self) -> Option<ThreadState> {
        match self {
            St::Running => Some(ThreadState::Running),
            St::Runnable => Some(ThreadState::Runnable),
            St::Blocked => Some(ThreadState::Blocked),
            _ => None,
        }
    }
}

/// One state-change row of a thread, ordered by (ts, seq, sub).
#[derive(Clone, Copy, Debug)]
struct Row {
    ts: i64,
    seq: u64,
    sub: i8,
    st: St,
    cpu: Option<i64>,
    comm: Option<u32>,
}

impl Row {
    fn key(&self) -> (i64, u64, i8) {
        (self.ts, self.seq, self.sub)
    }
}

/// The interval in progress of a thread.
#[derive(Clone, Copy)]
struct Open {
    st: St,
    comm: Option<u32>,
    start: i64,
    cpu: Option<i64>,
}

#[derive(Default)]
struct Thread {
    /// Rows not final yet, in key order.
    pending: Vec<Row>,
    /// The time of its last row that is not a rename, as read (`ran_from`).
    last_nonrename: Option<i64>,
    /// The state (and CPU) of its last processed row that is a state.
    before: Option<(St, Option<i64>)>,
    open: Option<Open>,
    last_run_cpu: Option<i64>,
    /// Its last name and process, with their times (`kernel_threads`).
    name: Option<(i64, u32)>,
    pid: Option<(i64, i64)>,
    /// The process its UST events give (for sources without the current task's pid).
    ust_pid: Option<i64>,
    /// The processes written in its rows so far: the first, and whether another followed.
    written: Option<Option<i64>>,
    mixed: bool,
}

impl Thread {
    /// Its process as known now: the last one seen current with it, else its UST one.
    fn pid_now(&self) -> Option<i64> {
        self.pid.map(|p| p.1).or(self.ust_pid)
    }

    /// Its process as known now, noted as written in a row.
    fn pid_written(&mut self) -> Option<i64> {
        let p = self.pid_now();
        match self.written {
            None => self.written = Some(p),
            Some(w) if w != p => self.mixed = true,
            _ => {}
        }
        p
    }
}

#[derive(Default)]
struct Host {
    /// Per CPU: the time of its last switch and the thread switched in.
    cpus: FxHashMap<i64, (i64, i64)>,
    threads: FxHashMap<i64, Thread>,
    /// The time of the host's last event (where the last intervals end).
    last_ts: Option<i64>,
}

/// Rows of output tables handed out at a time.
pub const CHUNK_ROWS: usize = 1 << 19;

/// Names of the tables handed out (before the processes are joined in).
/// The rows go out with each thread's process as known when they are written (its
/// last process seen current, else its UST process); `THREADS_TABLE` then gives each
/// thread's final one, and `rewrite` = 1 where a row of it was written with another.
pub const STATES_TABLE: &str = "thread_states";
pub const PREEMPTIONS_TABLE: &str = "preemptions";
pub const MIGRATIONS_TABLE: &str = "migrations";
pub const THREADS_TABLE: &str = "kernel_threads_raw";

const STATES: &[(&str, char)] =
    &[("host_id", 'i'), ("tid", 'i'), ("pid", 'i'), ("state", 's'), ("name", 's'), ("cpu", 'i'), ("start_ts", 'i'), ("end_ts", 'i')];
const PREEMPTIONS: &[(&str, char)] =
    &[("host_id", 'i'), ("ts", 'i'), ("cpu", 'i'), ("tid", 'i'), ("pid", 'i'), ("by_tid", 'i'), ("by_pid", 'i')];
const MIGRATIONS: &[(&str, char)] = &[("host_id", 'i'), ("ts", 'i'), ("tid", 'i'), ("pid", 'i'), ("from_cpu", 'i'), ("to_cpu", 'i')];
const THREADS: &[(&str, char)] = &[("host_id", 'i'), ("tid", 'i'), ("pid", 'i'), ("name", 's'), ("rewrite", 'i')];

/// Thread names, interned (events carry numbers).
#[derive(Default)]
struct Names {
    list: Vec<Box<[u8]>>,
    ids: FxHashMap<Box<[u8]>, u32>,
}

impl Names {
    fn id(&mut self, b: &[u8]) -> u32 {
        if let Some(&i) = self.ids.get(b) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(b.into());
        self.ids.insert(b.into(), i);
        i
    }

    fn text(&self, i: u32) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.list[i as usize])
    }
}

/// An empty chunk of thread states with room for `rows` rows (most of the
/// output: no doubling of its columns' memory as it fills).
fn states_table(rows: usize) -> Table {
    let mut t = Table::with_columns(STATES_TABLE, STATES);
    t.reserve_rows(rows + 64, rows * 12);
    t
}

/// The output tables being filled, and the chunks cut from them.
struct Out {
    chunk_rows: usize,
    states: Table,
    preemptions: Table,
    migrations: Table,
    done: Vec<Table>,
}

impl Out {
    fn new(chunk_rows: usize) -> Self {
        let chunk_rows = chunk_rows.max(1);
        Out {
            chunk_rows,
            states: states_table(chunk_rows),
            preemptions: Table::with_columns(PREEMPTIONS_TABLE, PREEMPTIONS),
            migrations: Table::with_columns(MIGRATIONS_TABLE, MIGRATIONS),
            done: Vec::new(),
        }
    }

    fn cut(&mut self, all: bool) {
        for (t, name, cols) in [
            (&mut self.states, STATES_TABLE, STATES),
            (&mut self.preemptions, PREEMPTIONS_TABLE, PREEMPTIONS),
            (&mut self.migrations, MIGRATIONS_TABLE, MIGRATIONS),
        ] {
            if t.rows >= self.chunk_rows || (all && t.rows > 0) {
                let fresh = if name == STATES_TABLE { states_table(self.chunk_rows) } else { Table::with_columns(name, cols) };
                self.done.push(std::mem::replace(t, fresh));
            }
        }
    }

    /// Writes a finished interval of thread `tid` (`next`: the state and CPU
    /// that follow it).
    fn interval(&mut self, names: &Names, (host, tid): (i64, i64), th: &mut Thread, o: Open, end: i64, next: Option<(St, Option<i64>)>) {
        let Some(code) = o.st.code() else { return };
        if end <= o.start {
            return;
        }
        let cpu = match o.st {
            St::Running => o.cpu,
            St::Runnable => match next {
                Some((St::Running, c)) => c,
                _ => o.cpu,
            },
            _ => None,
        };
        let pid = th.pid_written();
        if o.st == St::Running {
            if let (Some(from), Some(to)) = (th.last_run_cpu, cpu) {
                if from != to {
                    self.migrations.row().i(Some(host)).i(Some(o.start)).i(Some(tid)).i(pid).i(Some(from)).i(Some(to)).done();
                }
            }
            th.last_run_cpu = cpu;
        }
        let name = o.comm.map(|c| names.text(c));
        self.states
            .row()
            .i(Some(host))
            .i(Some(tid))
            .i(pid)
            .s(Some(code.name()))
            .s(name.as_deref())
            .i(cpu)
            .i(Some(o.start))
            .i(Some(end))
            .done();
    }
}

/// The streamed build. `add` each host's events in time order; `take_chunks`
/// hands out the rows made so far (in chunks of about `CHUNK_ROWS`); `finish`
/// closes what is open and gives the last rows and the threads.
pub struct KernelBuilder {
    hosts: FxHashMap<i64, Host>,
    names: Names,
    seq: u64,
    out: Out,
    /// Events taken.
    pub events: u64,
    /// Switch-outs of a thread that was not the CPU's current one: the data misses the
    /// switch-in (perf wrote no loss record for it); the run is estimated.
    pub missed_switches: u64,
}

impl Default for KernelBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl KernelBuilder {
    pub fn new() -> Self {
        Self::with_chunk_rows(CHUNK_ROWS)
    }

    /// A builder handing out chunks of about `chunk_rows` rows.
    pub fn with_chunk_rows(chunk_rows: usize) -> Self {
        KernelBuilder {
            hosts: FxHashMap::default(),
            names: Names::default(),
            seq: 0,
            out: Out::new(chunk_rows),
            events: 0,
            missed_switches: 0,
        }
    }

    /// The process of thread `tid` of host `host` by its UST events: its process
    /// where no sched event says (an LTTng kernel trace without a `pid` context).
    pub fn ust_pid(&mut self, host: i64, tid: i64, pid: i64) {
        self.hosts.entry(host).or_default().threads.entry(tid).or_default().ust_pid = Some(pid);
    }

    /// Takes one event of host `host`; events of a host come in time order.
    pub fn add(&mut self, host: i64, e: &RawEvent) {
        self.events += 1;
        self.seq += 1;
        let seq = self.seq;
        let h = self.hosts.entry(host).or_default();
        h.last_ts = Some(h.last_ts.map_or(e.ts, |t| t.max(e.ts)));
        match e.kind {
            Kind::Switch => self.switch(host, seq, e),
            kind if e.tid != 0 => {
                let comm = self.names.id(e.comm);
                let th = h.threads.entry(e.tid).or_default();
                note_name(th, e.ts, comm);
                let st = match kind {
                    Kind::Wakeup => St::Wakeup,
                    Kind::WakeupNew => St::WakeupNew,
                    _ => St::Rename,
                };
                let cpu = if st == St::Rename { None } else { e.target_cpu };
                if st != St::Rename {
                    th.last_nonrename = Some(e.ts);
                }
                push(th, Row { ts: e.ts, seq, sub: 0, st, cpu, comm: Some(comm) });
                self.settle(host, e.tid);
            }
            _ => {}
        }
        self.out.cut(false);
    }

    fn switch(&mut self, host: i64, seq: u64, e: &RawEvent) {
        let (prev, next) = (e.prev_tid, e.next_tid);
        let (pc, nc) = (self.names.id(e.prev_comm), self.names.id(e.next_comm));
        let h = self.hosts.get_mut(&host).expect("host");
        let before = h.cpus.insert(e.cpu, (e.ts, next));
        if prev != 0 {
            let th = h.threads.entry(prev).or_default();
            note_name(th, e.ts, pc);
            if let Some(p) = e.cur_pid {
                if th.pid.is_none_or(|(t, _)| e.ts > t) {
                    th.pid = Some((e.ts, p));
                }
            }
        }
        if next != 0 {
            note_name(h.threads.entry(next).or_default(), e.ts, nc);
        }
        if prev == next {
            return;
        }
        if e.prev_runnable && prev != 0 && next != 0 {
            let pp = h.threads.entry(prev).or_default().pid_written();
            let np = h.threads.entry(next).or_default().pid_written();
            self.out.preemptions.row().i(Some(host)).i(Some(e.ts)).i(Some(e.cpu)).i(Some(prev)).i(pp).i(Some(next)).i(np).done();
        }
        let mut was_row = None;
        if prev != 0 {
            let th = h.threads.entry(prev).or_default();
            let st = if e.prev_runnable { St::Runnable } else { St::Blocked };
            // The switch-out names another thread than the CPU's current one: a missed switch.
            if let Some((t0, was)) = before.filter(|&(_, was)| was != prev) {
                self.missed_switches += 1;
                let ran_from = th.last_nonrename.map_or(t0, |l| l.max(t0));
                push(th, Row { ts: ran_from, seq, sub: -1, st: St::Running, cpu: Some(e.cpu), comm: Some(pc) });
                if was != 0 {
                    was_row = Some((was, Row { ts: ran_from, seq, sub: -2, st: St::Unknown, cpu: Some(e.cpu), comm: None }));
                }
            }
            push(th, Row { ts: e.ts, seq, sub: 0, st, cpu: Some(e.cpu), comm: Some(pc) });
            th.last_nonrename = Some(e.ts);
        }
        if let Some((was, row)) = was_row {
            push(h.threads.entry(was).or_default(), row);
        }
        if next != 0 {
            let th = h.threads.entry(next).or_default();
            push(th, Row { ts: e.ts, seq, sub: 1, st: St::Running, cpu: Some(e.cpu), comm: Some(nc) });
            th.last_nonrename = Some(e.ts);
        }
        for t in [prev, next, was_row.map_or(0, |(w, _)| w)] {
            if t != 0 {
                self.settle(host, t);
            }
        }
    }

    /// Processes the rows of thread `tid` that no later event can precede.
    fn settle(&mut self, host: i64, tid: i64) {
        let Some(h) = self.hosts.get_mut(&host) else { return };
        let Some(th) = h.threads.get_mut(&tid) else { return };
        let mut horizon = match th.last_nonrename {
            Some(t) => t,
            // No row of its own yet: a missed switch may place one after any CPU's last switch.
            None => h.cpus.values().map(|&(t, _)| t).min().unwrap_or(i64::MIN),
        };
        for &(t, cur) in h.cpus.values() {
            if cur == tid {
                horizon = horizon.min(t);
            }
        }
        let n = th.pending.iter().take_while(|r| r.ts <= horizon).count();
        process(&mut self.out, &self.names, host, tid, th, n);
    }

    /// The tables made so far, as chunks.
    pub fn take_chunks(&mut self) -> Vec<Table> {
        std::mem::take(&mut self.out.done)
    }

    /// After the last event: every thread's rows are final; each last interval
    /// ends with its host's last event. Returns the last chunks and the table of
    /// the threads the events name (host, tid, process, last name, rewrite: whether
    /// rows were written with another process).
    pub fn finish(mut self) -> Vec<Table> {
        let mut hosts: Vec<i64> = self.hosts.keys().copied().collect();
        hosts.sort_unstable();
        let mut threads = Table::with_columns(THREADS_TABLE, THREADS);
        for host in hosts {
            let Some(h) = self.hosts.get_mut(&host) else { continue };
            let last = h.last_ts.unwrap_or(0);
            let mut tids: Vec<i64> = h.threads.keys().copied().collect();
            tids.sort_unstable();
            for tid in tids {
                let Some(th) = h.threads.get_mut(&tid) else { continue };
                let n = th.pending.len();
                process(&mut self.out, &self.names, host, tid, th, n);
                if let Some(o) = th.open.take() {
                    self.out.interval(&self.names, (host, tid), th, o, last, None);
                }
                let Some(name) = th.name.map(|(_, c)| self.names.text(c)) else { continue };
                let pid = th.pid_now();
                let rewrite = th.mixed || th.written.is_some_and(|w| w != pid);
                threads.row().i(Some(host)).i(Some(tid)).i(pid).s(Some(&name)).i(Some(rewrite as i64)).done();
                self.out.cut(false);
            }
        }
        self.out.cut(true);
        let mut out = std::mem::take(&mut self.out.done);
        out.push(threads);
        out
    }
}

/// Processes the first `n` pending rows of a thread, in order: each row's
/// effective state (a wake-up counts only from blocked or unknown, a rename
/// keeps the state), and an interval written at each change of state or name.
fn process(out: &mut Out, names: &Names, host: i64, tid: i64, th: &mut Thread, n: usize) {
    for i in 0..n {
        let r = th.pending[i];
        let eff = match r.st {
            St::Wakeup | St::WakeupNew => {
                let ok = matches!(th.before, Some((St::Blocked | St::Unknown, _))) || (r.st == St::WakeupNew && th.before.is_none());
                ok.then_some((St::Runnable, r.cpu))
            }
            St::Rename => th.before,
            st => {
                th.before = Some((st, r.cpu));
                Some((st, r.cpu))
            }
        };
        let Some((st, cpu)) = eff else { continue };
        if th.open.is_some_and(|o| o.st == st && o.comm == r.comm) {
            continue;
        }
        if let Some(o) = th.open.replace(Open { st, comm: r.comm, start: r.ts, cpu }) {
            out.interval(names, (host, tid), th, o, r.ts, Some((st, cpu)));
        }
    }
    th.pending.drain(..n);
}

fn note_name(th: &mut Thread, ts: i64, comm: u32) {
    if th.name.is_none_or(|(t, _)| ts > t) {
        th.name = Some((ts, comm));
    }
}

/// Inserts a row in key order (rows mostly come in order: from the back).
fn push(th: &mut Thread, r: Row) {
    let k = r.key();
    let at = th.pending.iter().rposition(|x| x.key() <= k).map_or(0, |i| i + 1);
    th.pending.insert(at, r);
}

#[cfg(test)]
mod tests;
