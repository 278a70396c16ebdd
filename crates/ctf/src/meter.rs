//! Counters that a long job updates and another thread reads while it runs:
//! progress without a call into Python per event. A job stores plain numbers
//! (relaxed atomics) at its own pace (per chunk of events, per output message),
//! and whoever shows progress reads them when it wants to.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a long job has done so far. The meaning of each counter is the job's:
/// reading traces, `done` and `total` are bytes and `found` events; a data-flow
/// search, `done` is output messages searched, `found` flows and `work`
/// candidate flows examined.
#[derive(Debug, Default)]
pub struct Meter {
    pub done: AtomicU64,
    pub total: AtomicU64,
    pub found: AtomicU64,
    pub work: AtomicU64,
}

impl Meter {
    /// (done, total, found, work) as last stored.
    pub fn read(&self) -> [u64; 4] {
        [self.done.load(Relaxed), self.total.load(Relaxed), self.found.load(Relaxed), self.work.load(Relaxed)]
    }

    pub fn set(&self, done: u64, total: u64, found: u64) {
        self.done.store(done, Relaxed);
        self.total.store(total, Relaxed);
        self.found.store(found, Relaxed);
    }

    pub fn add(&self, done: u64, found: u64, work: u64) {
        if done != 0 {
            self.done.fetch_add(done, Relaxed);
        }
        if found != 0 {
            self.found.fetch_add(found, Relaxed);
        }
        if work != 0 {
            self.work.fetch_add(work, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_across_threads() {
        let m = std::sync::Arc::new(Meter::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        m.add(1, 2, 3);
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(m.read(), [4000, 0, 8000, 12000]);
        m.set(5, 10, 7);
        assert_eq!(m.read(), [5, 10, 7, 12000]);
    }
}
