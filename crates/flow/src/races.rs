//! Races between callbacks: runs that overlap in time on different threads of one
//! process (a multi-threaded executor or spinner). A flow through an intra-node
//! dependency A -> B is uncertain when a run of A overlapped B's run
//! (`FlowOptions::overlaps`): whether B read what that run of A wrote is not known
//! from the trace.

use std::collections::HashSet;

/// A sweep over callback runs fed in (process, start) order: each run is compared
/// with the runs of the same process still running when it starts, which are few
/// (at most one per thread, but for runs nested on a thread), so the sweep costs
/// little more than reading the runs.
#[derive(Default)]
pub struct OverlapSweep {
    key: Option<i64>,
    /// Runs of the current process that may still be running: (end, thread, callback, start).
    active: Vec<(i64, i64, i64, i64)>,
    last_start: i64,
    /// (callback of the overlapping run, callback of the overlapped run, its start).
    pub found: HashSet<(i64, i64, i64)>,
}

impl OverlapSweep {
    /// The next run: of process (or any grouping) `key`, on `thread`, of `callback`,
    /// from `start` to `end`. Runs come in (key, start) order; Err when they do not.
    pub fn push(&mut self, key: i64, thread: i64, callback: i64, start: i64, end: i64) -> Result<(), String> {
        self.push_kept(key, thread, callback, start, end, |_, _| true)
    }

    /// `push`, keeping only the overlaps (a, b, start of b's run) for which
    /// `keep(a, b)` holds: a search needs those of its intra-node edges only
    /// (`FlowOptions::depends_on`), far fewer than a long trace's overlaps.
    pub fn push_kept(
        &mut self,
        key: i64,
        thread: i64,
        callback: i64,
        start: i64,
        end: i64,
        keep: impl Fn(i64, i64) -> bool,
    ) -> Result<(), String> {
        if self.key != Some(key) {
            self.key = Some(key);
            self.active.clear();
        } else if start < self.last_start {
            return Err(format!("runs are not in (process, start) order at process {}, start {}", key, start));
        }
        self.last_start = start;
        self.active.retain(|&(e, ..)| e > start);
        for &(e, t, c, s) in &self.active {
            // s <= start < e: they overlap when the new run has a length past s
            if t != thread && s < end && start < e {
                if keep(c, callback) {
                    self.found.insert((c, callback, start));
                }
                if keep(callback, c) {
                    self.found.insert((callback, c, s));
                }
            }
        }
        if end > start {
            self.active.push((end, thread, callback, start));
        }
        Ok(())
    }

    /// `push_kept` of runs as columns: process (or any grouping), thread, callback,
    /// start, end.
    pub fn push_columns(&mut self, cols: &[&[i64]], keep: impl Fn(i64, i64) -> bool) -> Result<(), String> {
        let [k, th, cb, s, e] = cols else {
            return Err(format!("runs come as 5 columns (process, thread, callback, start, end), not {}", cols.len()));
        };
        for ((((&k, &th), &cb), &s), &e) in k.iter().zip(*th).zip(*cb).zip(*s).zip(*e) {
            self.push_kept(k, th, cb, s, e, &keep)?;
        }
        Ok(())
    }

    /// The overlaps found, sorted.
    pub fn finish(self) -> Vec<(i64, i64, i64)> {
        let mut v: Vec<_> = self.found.into_iter().collect();
        v.sort_unstable_by_key(|&(a, b, t)| (b, t, a));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_on_other_threads_only() {
        let mut s = OverlapSweep::default();
        // process 1: callback 10 on thread 1 [0, 10), callback 20 on thread 2 [5, 8) (inside it),
        // callback 30 on thread 1 [2, 3) (nested in 10's run, same thread: no race),
        // callback 40 on thread 2 [10, 12) (starts as 10 ends: no overlap)
        for (t, c, a, b) in [(1, 10, 0, 10), (1, 30, 2, 3), (2, 20, 5, 8), (2, 40, 10, 12)] {
            s.push(1, t, c, a, b).unwrap();
        }
        // process 2: the same times, one thread each: never compared with process 1
        s.push(2, 3, 50, 1, 9).unwrap();
        assert_eq!(s.finish(), vec![(20, 10, 0), (10, 20, 5)]);
    }

    #[test]
    fn only_the_kept_pairs() {
        let mut s = OverlapSweep::default();
        // callback 10 [0, 10) on thread 1 overlaps 20 [5, 8) and 30 [6, 9) on thread 2;
        // kept: 10 -> 20 only (as if 20 depended on 10 and nothing else)
        for (t, c, a, b) in [(1, 10, 0, 10), (2, 20, 5, 8), (3, 30, 6, 9)] {
            s.push_kept(1, t, c, a, b, |a, b| (a, b) == (10, 20)).unwrap();
        }
        assert_eq!(s.finish(), vec![(10, 20, 5)]);
    }

    #[test]
    fn out_of_order_runs_are_an_error() {
        let mut s = OverlapSweep::default();
        s.push(1, 1, 10, 5, 6).unwrap();
        assert!(s.push(1, 2, 20, 4, 6).is_err());
    }
}
