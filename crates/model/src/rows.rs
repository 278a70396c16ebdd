//! Instance records (callback runs, publications, takes) with stable ids, of
//! which the oldest can leave memory once nothing will change them.
//!
//! A record's id is its position in creation order and never changes. With
//! a streaming build (`Options::window_ns`), the builder drains the records
//! that are older than the window: the final ones are emitted as table
//! chunks, the others (a callback run still open) are *held* aside until they
//! become final. Handlers reach a record by id through `get`/`get_mut`, which
//! answer None for a record that has already been emitted.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

pub struct Rows<T> {
    /// Id of `recent[0]`: every record before it was drained.
    base: usize,
    recent: VecDeque<T>,
    /// Drained records that were not final yet, by id.
    held: FxHashMap<usize, T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows { base: 0, recent: VecDeque::new(), held: FxHashMap::default() }
    }
}

impl<T> Rows<T> {
    /// Adds a record; returns its id.
    pub fn push(&mut self, t: T) -> usize {
        self.recent.push_back(t);
        self.base + self.recent.len() - 1
    }

    /// How many records were ever created (the next id).
    pub fn created(&self) -> usize {
        self.base + self.recent.len()
    }

    /// How many records are in memory (recent and held).
    pub fn in_memory(&self) -> usize {
        self.recent.len() + self.held.len()
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        match i.checked_sub(self.base) {
            Some(k) => self.recent.get(k),
            None => self.held.get(&i),
        }
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        match i.checked_sub(self.base) {
            Some(k) => self.recent.get_mut(k),
            None => self.held.get_mut(&i),
        }
    }

    /// The records in memory with their ids: held ones (in id order), then recent ones.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        let mut held: Vec<(usize, &T)> = self.held.iter().map(|(&i, t)| (i, t)).collect();
        held.sort_unstable_by_key(|x| x.0);
        held.into_iter().chain(self.recent.iter().enumerate().map(|(k, t)| (self.base + k, t)))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.held.values_mut().chain(self.recent.iter_mut())
    }

    /// Takes out the oldest records while `old` says so, in id order: the
    /// final ones (`done`) are returned, the others are held. Held records
    /// that are now `done` are returned too.
    pub fn drain(&mut self, old: impl Fn(&T) -> bool, done: impl Fn(&T) -> bool) -> Vec<(usize, T)> {
        let mut out = Vec::new();
        if !self.held.is_empty() {
            let ready: Vec<usize> = self.held.iter().filter(|(_, t)| done(t)).map(|(&i, _)| i).collect();
            for i in ready {
                if let Some(t) = self.held.remove(&i) {
                    out.push((i, t));
                }
            }
            out.sort_unstable_by_key(|x| x.0);
        }
        while self.recent.front().is_some_and(&old) {
            let Some(t) = self.recent.pop_front() else { break };
            let i = self.base;
            self.base += 1;
            if done(&t) {
                out.push((i, t));
            } else {
                self.held.insert(i, t);
            }
        }
        out
    }

    /// The least `key` of the records not yet drained (none held), or None.
    pub fn least_recent<K: Ord>(&self, key: impl Fn(&T) -> K) -> Option<K> {
        self.recent.iter().map(key).min()
    }

    /// Every record in memory, in id order, leaving none.
    pub fn drain_all(&mut self) -> Vec<(usize, T)> {
        let mut out: Vec<(usize, T)> = self.held.drain().collect();
        out.sort_unstable_by_key(|x| x.0);
        let base = self.base;
        self.base += self.recent.len();
        out.extend(self.recent.drain(..).enumerate().map(|(k, t)| (base + k, t)));
        out
    }
}

impl<T> std::ops::Index<usize> for Rows<T> {
    type Output = T;
    /// A record known to be in memory (e.g. one just pushed).
    fn index(&self, i: usize) -> &T {
        self.get(i).unwrap_or_else(|| panic!("record {i} is no longer in memory"))
    }
}

impl<T> std::ops::IndexMut<usize> for Rows<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).unwrap_or_else(|| panic!("record {i} is no longer in memory"))
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn ids_stay_and_open_records_are_held() {
        let mut r: Rows<(u64, bool)> = Rows::default();
        for k in 0..6 {
            assert_eq!(r.push((k, k != 1)), k as usize);
        }
        // Records with time < 4 are old; record 1 is not final: it is held.
        let out = r.drain(|x| x.0 < 4, |x| x.1);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 2, 3]);
        assert_eq!(r.created(), 6);
        assert_eq!(r.in_memory(), 3);
        assert!(r.get(0).is_none());
        r.get_mut(1).unwrap().1 = true;
        assert_eq!(r.push((9, true)), 6);
        let out = r.drain(|x| x.0 < 5, |x| x.1);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 4]);
        let rest = r.drain_all();
        assert_eq!(rest.iter().map(|x| x.0).collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!(r.created(), 7);
        assert_eq!(r.in_memory(), 0);
        assert_eq!(r.push((10, true)), 7);
    }

    #[test]
    fn an_old_record_behind_a_younger_one_is_the_least_recent() {
        // Times out of id order (a ROS 1 take: made when its callback starts, timed when its
        // message was queued): 2 is old, but waits behind 1, which is not.
        let mut r: Rows<(u64, bool)> = Rows::default();
        for t in [1, 8, 2, 9] {
            r.push((t, true));
        }
        let out = r.drain(|x| x.0 < 5, |x| x.1);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(r.least_recent(|x| x.0), Some(2));
        let out = r.drain(|x| x.0 < 9, |x| x.1);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(r.least_recent(|x| x.0), Some(9));
        r.drain_all();
        assert_eq!(r.least_recent(|x| x.0), None);
    }
}
