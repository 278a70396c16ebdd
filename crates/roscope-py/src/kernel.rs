//! Kernel scheduling for Python (python/roscope/kernel.py): the streamed
//! builder of `roscope_model::kernel`, fed from a perf.data read directly,
//! an LTTng kernel trace, or batches of events (perf script's text, parsed in
//! Python), handing its tables out in chunks through a callable.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use roscope_model::kernel::{self, KernelClockMap, Kind, PerfError, RawEvent};
use roscope_model::table::{Data, Table};

use crate::arrow::{table_from_stream, ArrowTable};

create_exception!(_core, PerfUnsupported, PyValueError, "A perf.data this reader does not handle: read it with `perf script`.");
create_exception!(_core, PerfNoSched, PyValueError, "A perf.data without sched:sched_switch events.");

/// Events between two hand-overs of chunks (and checks for Ctrl-C).
const EVERY: u64 = 1 << 18;

#[pyclass(module = "roscope._core", unsendable)]
pub struct KernelBuilder {
    inner: Option<kernel::KernelBuilder>,
}

fn mapper(map: Option<(i64, i64, f64)>) -> impl Fn(i64) -> i64 {
    let m = map.map(|(x0, ref_at_x0, slope)| KernelClockMap { x0, ref_at_x0, slope });
    move |t| m.as_ref().map_or(t, |m| m.apply(t))
}

impl KernelBuilder {
    fn inner(&mut self) -> PyResult<&mut kernel::KernelBuilder> {
        self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("this KernelBuilder is finished"))
    }
}

/// Runs a reader in a worker thread, which feeds the builder and sends its
/// chunks (as Arrow) while this thread, without the GIL but for each call, hands
/// them to `put`: reading and storing overlap. An error of the callable, or
/// Ctrl-C, stops the reader at its next event.
fn run<E: Send>(
    py: Python<'_>,
    b: &mut kernel::KernelBuilder,
    host: i64,
    put: &PyObject,
    read: impl FnOnce(&mut dyn FnMut(&RawEvent)) -> Result<(), E> + Send,
) -> PyResult<Result<(), E>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{sync_channel, RecvTimeoutError};

    let stop = AtomicBool::new(false);
    let (tx, rx) = sync_channel::<PyResult<(String, ArrowTable)>>(0);
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|scope| {
        let stop = &stop;
        let worker = scope.spawn(move || {
            let send = |b: &mut kernel::KernelBuilder| {
                for t in b.take_chunks() {
                    let name = t.name.to_string();
                    if tx.send(ArrowTable::from_table(t).map(|a| (name, a))).is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            };
            let mut n = 0u64;
            let res = read(&mut |e: &RawEvent| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                b.add(host, e);
                n += 1;
                if n.is_multiple_of(EVERY) {
                    send(b);
                }
            });
            send(b);
            res
        });
        let mut failed: Option<PyErr> = None;
        loop {
            let got = py.allow_threads(|| match rx.lock() {
                Ok(rx) => rx.recv_timeout(std::time::Duration::from_millis(200)),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            });
            match got {
                Ok(chunk) if failed.is_none() => {
                    if let Err(e) = chunk.and_then(|(name, a)| put.call1(py, (name, a)).map(|_| ())) {
                        stop.store(true, Ordering::Relaxed);
                        failed = Some(e);
                    }
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    if failed.is_none() {
                        if let Err(e) = py.check_signals() {
                            stop.store(true, Ordering::Relaxed);
                            failed = Some(e);
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let res = py.allow_threads(|| worker.join()).map_err(|_| PyRuntimeError::new_err("the kernel data reader failed"))?;
        match failed {
            Some(e) => Err(e),
            None => Ok(res),
        }
    })
}

#[pymethods]
impl KernelBuilder {
    #[new]
    #[pyo3(signature = (chunk_rows=kernel::CHUNK_ROWS))]
    fn new(chunk_rows: usize) -> Self {
        KernelBuilder { inner: Some(kernel::KernelBuilder::with_chunk_rows(chunk_rows)) }
    }

    /// Reads perf.data `path` (host `host`, its times mapped by `map` =
    /// (x0, ref_at_x0, slope) if given); returns its facts: {"clock", "lost_chunks",
    /// "lost_samples", "records", "events", "first_ts", "last_ts"}. Raises
    /// PerfUnsupported for a file to read with `perf script`, PerfNoSched for one
    /// without sched_switch, ValueError for a damaged one.
    #[pyo3(signature = (path, host, map, put))]
    fn add_perf(&mut self, py: Python<'_>, path: &str, host: i64, map: Option<(i64, i64, f64)>, put: PyObject) -> PyResult<PyObject> {
        let f = mapper(map);
        let b = self.inner()?;
        let mut span: Option<(i64, i64)> = None;
        let mut facts = None;
        let res = run(py, b, host, &put, |sink| {
            let mut wrapped = |e: &RawEvent| {
                span = Some(span.map_or((e.ts, e.ts), |(a, z)| (a.min(e.ts), z.max(e.ts))));
                sink(e);
            };
            kernel::read_perf(path, &f, &mut wrapped).map(|x| facts = Some(x))
        })?;
        match res {
            Ok(()) => {}
            Err(PerfError::Unsupported(m)) => return Err(PerfUnsupported::new_err(m)),
            Err(PerfError::NoSched) => return Err(PerfNoSched::new_err("no sched:sched_switch events")),
            Err(PerfError::Bad(m)) => return Err(PyValueError::new_err(m)),
        }
        let facts = facts.unwrap_or_default();
        let d = PyDict::new_bound(py);
        d.set_item("clock", facts.clock)?;
        d.set_item("lost_chunks", facts.lost_chunks)?;
        d.set_item("lost_samples", facts.lost_samples)?;
        d.set_item("records", facts.records)?;
        d.set_item("events", facts.events)?;
        d.set_item("first_ts", span.map(|s| s.0))?;
        d.set_item("last_ts", span.map(|s| s.1))?;
        Ok(d.into())
    }

    /// How many switch-outs so far named a thread that was not its CPU's current one (the
    /// data misses a switch; that run's start is estimated).
    #[getter]
    fn missed_switches(&mut self) -> PyResult<u64> {
        Ok(self.inner()?.missed_switches)
    }

    /// Reads the LTTng kernel trace under `path`; returns how many sched events.
    #[pyo3(signature = (path, host, map, put))]
    fn add_lttng(&mut self, py: Python<'_>, path: &str, host: i64, map: Option<(i64, i64, f64)>, put: PyObject) -> PyResult<u64> {
        let f = mapper(map);
        let b = self.inner()?;
        let mut n = 0;
        let res = run(py, b, host, &put, |sink| kernel::read_lttng(path, &f, sink).map(|x| n = x))?;
        res.map_err(|m| PyValueError::new_err(format!("{path}: {m}")))?;
        Ok(n)
    }

    /// Takes a batch of events in kernel.py's normalized layout (ts, cpu, kind,
    /// cur_pid, prev_tid, prev_runnable (0/1), prev_comm, next_tid, next_comm,
    /// woken_tid, target_cpu, woken_comm), their times already mapped.
    fn add_batch(&mut self, py: Python<'_>, batch: &Bound<'_, PyAny>, host: i64, put: PyObject) -> PyResult<()> {
        const COLS: &[&str] = &[
            "ts",
            "cpu",
            "kind",
            "cur_pid",
            "prev_tid",
            "prev_runnable",
            "prev_comm",
            "next_tid",
            "next_comm",
            "woken_tid",
            "target_cpu",
            "woken_comm",
        ];
        let t = table_from_stream("sched events", COLS, batch)?;
        let b = self.inner()?;
        run::<()>(py, b, host, &put, |sink| {
            for r in 0..t.rows {
                let ev = event_at(&t, r);
                sink(&ev);
            }
            Ok(())
        })?
        .ok();
        Ok(())
    }

    /// The processes of threads by their UST events: a table (host_id, tid, pid).
    fn ust_pids(&mut self, table: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = table_from_stream("ust threads", &["host_id", "tid", "pid"], table)?;
        let b = self.inner()?;
        for r in 0..t.rows {
            if let (Some(h), Some(tid), Some(pid)) = (int(&t, 0, r), int(&t, 1, r), int(&t, 2, r)) {
                b.ust_pid(h, tid, pid);
            }
        }
        Ok(())
    }

    /// After the last source: the last chunks and the threads table, handed to `put`.
    fn finish(&mut self, py: Python<'_>, put: PyObject) -> PyResult<()> {
        let b = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("this KernelBuilder is finished"))?;
        for t in b.finish() {
            let name = t.name.to_string();
            put.call1(py, (name, ArrowTable::from_table(t)?))?;
        }
        Ok(())
    }
}

fn int(t: &Table, c: usize, r: usize) -> Option<i64> {
    let col = &t.cols[c];
    if col.any_null && col.valid[r] == 0 {
        return None;
    }
    match &col.data {
        Data::I64(v) => Some(v[r]),
        Data::U64(v) => Some(v[r] as i64),
        _ => None,
    }
}

fn bytes(t: &Table, c: usize, r: usize) -> &[u8] {
    match &t.cols[c].data {
        Data::Str(b, o) => &b[o[r] as usize..o[r + 1] as usize],
        _ => &[],
    }
}

/// Row `r` of a batch (columns in `add_batch`'s order) as an event.
fn event_at(t: &Table, r: usize) -> RawEvent<'_> {
    let ts = int(t, 0, r).unwrap_or(0);
    let cpu = int(t, 1, r).unwrap_or(0);
    match bytes(t, 2, r) {
        b"switch" => RawEvent::switch(
            ts,
            cpu,
            int(t, 3, r),
            (int(t, 4, r).unwrap_or(0), int(t, 5, r).unwrap_or(0) != 0, bytes(t, 6, r)),
            (int(t, 7, r).unwrap_or(0), bytes(t, 8, r)),
        ),
        kind => {
            let k = match kind {
                b"wakeup" => Kind::Wakeup,
                b"wakeup_new" => Kind::WakeupNew,
                _ => Kind::Rename,
            };
            RawEvent::task(ts, cpu, k, int(t, 9, r).unwrap_or(0), int(t, 10, r), bytes(t, 11, r))
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KernelBuilder>()?;
    m.add("PerfUnsupported", m.py().get_type_bound::<PerfUnsupported>())?;
    m.add("PerfNoSched", m.py().get_type_bound::<PerfNoSched>())?;
    Ok(())
}
