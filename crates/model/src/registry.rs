//! Handle lookups: what a handle names in a process instance.
//!
//! Trace events name objects by handle (an address), and an address names
//! different objects over time: after an object dies, its address may be
//! reused by a new one. So a handle is looked up *in a process instance*,
//! and names the object that is current for it: `Registry::start` begins a
//! new object's lifetime under a handle (the old object keeps its row),
//! `Registry::find` gives the current one.
//!
//! - `HandleMap<V>`: a value per (process instance, handle), the building
//!   block (e.g. the GID an rmw handle was given, the buffer an ipb owns);
//! - `Registry<T>`: the objects of one kind (rows of one table) and the
//!   handles naming them, per layer: an object may be named by its rcl
//!   handle, its rmw handle and its rclcpp object (`Layer`).

use rustc_hash::FxHashMap;

/// A value per (process instance, handle).
#[derive(Debug)]
pub struct HandleMap<V>(FxHashMap<(usize, u64), V>);

impl<V> Default for HandleMap<V> {
    fn default() -> Self {
        HandleMap(FxHashMap::default())
    }
}

impl<V> HandleMap<V> {
    #[inline]
    pub fn get(&self, proc: usize, handle: u64) -> Option<&V> {
        self.0.get(&(proc, handle))
    }
    #[inline]
    pub fn get_mut(&mut self, proc: usize, handle: u64) -> Option<&mut V> {
        self.0.get_mut(&(proc, handle))
    }
    #[inline]
    pub fn contains(&self, proc: usize, handle: u64) -> bool {
        self.0.contains_key(&(proc, handle))
    }
    #[inline]
    pub fn insert(&mut self, proc: usize, handle: u64, v: V) {
        self.0.insert((proc, handle), v);
    }
    #[inline]
    pub fn remove(&mut self, proc: usize, handle: u64) {
        self.0.remove(&(proc, handle));
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.values_mut()
    }
    pub fn retain(&mut self, keep: impl FnMut(&(usize, u64), &mut V) -> bool) {
        self.0.retain(keep)
    }
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.values()
    }
}

/// Which handle of an object a lookup uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// The rcl handle (ROS 1: the object's address): the object's own key.
    Rcl = 0,
    /// The rmw handle.
    Rmw = 1,
    /// The rclcpp object (subscriptions).
    Rclcpp = 2,
}

const LAYERS: usize = 3;

/// What a registry needs to make an object known only by a handle (its init
/// event was not recorded).
pub trait Unknown {
    fn unknown(proc: usize, handle: u64) -> Self;
}

/// The objects of one kind, in order of appearance (row ids), and the
/// handles naming the current object of each, per layer.
pub struct Registry<T> {
    pub items: Vec<T>,
    names: [HandleMap<usize>; LAYERS],
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry { items: Vec::new(), names: Default::default() }
    }
}

impl<T> std::ops::Index<usize> for Registry<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.items[i]
    }
}

impl<T> std::ops::IndexMut<usize> for Registry<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.items[i]
    }
}

impl<T> Registry<T> {
    /// The object `handle` currently names in `proc`.
    #[inline]
    pub fn find(&self, layer: Layer, proc: usize, handle: u64) -> Option<usize> {
        self.names[layer as usize].get(proc, handle).copied()
    }

    /// A new object that no handle names (yet).
    pub fn push(&mut self, item: T) -> usize {
        self.items.push(item);
        self.items.len() - 1
    }

    /// From now on `handle` names object `i` (whatever it named before).
    #[inline]
    pub fn name(&mut self, layer: Layer, proc: usize, handle: u64, i: usize) {
        self.names[layer as usize].insert(proc, handle, i);
    }

    /// A new object, named by `handle` from now on: the lifetime of the
    /// object the handle named before (if any) is over.
    pub fn start(&mut self, layer: Layer, proc: usize, handle: u64, item: T) -> usize {
        let i = self.push(item);
        self.name(layer, proc, handle, i);
        i
    }

    /// The object `handle` names, or a new one made by `make` and named by it.
    #[inline]
    pub fn find_or_start(&mut self, layer: Layer, proc: usize, handle: u64, make: impl FnOnce() -> T) -> usize {
        match self.find(layer, proc, handle) {
            Some(i) => i,
            None => self.start(layer, proc, handle, make()),
        }
    }

    /// Removes the newest object `i` (row ids stay dense: only the last one can go) and every
    /// handle naming it; false (nothing done) if `i` is not the newest.
    pub fn remove_newest(&mut self, i: usize) -> bool {
        if i + 1 != self.items.len() {
            return false;
        }
        self.items.pop();
        for names in &mut self.names {
            names.retain(|_, v| *v != i);
        }
        true
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
}

impl<T: Unknown> Registry<T> {
    /// The object the rcl `handle` names, or a new unknown one.
    #[inline]
    pub fn get(&mut self, proc: usize, handle: u64) -> usize {
        self.find_or_start(Layer::Rcl, proc, handle, || T::unknown(proc, handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct O(usize, u64);
    impl Unknown for O {
        fn unknown(proc: usize, handle: u64) -> Self {
            O(proc, handle)
        }
    }

    #[test]
    fn a_handle_names_one_object_per_process_and_layer() {
        let mut r: Registry<O> = Registry::default();
        let a = r.get(0, 0x10);
        assert_eq!(r.get(0, 0x10), a);
        let b = r.get(1, 0x10);
        assert_ne!(a, b);
        assert_eq!(r.find(Layer::Rmw, 0, 0x10), None);
        r.name(Layer::Rmw, 0, 0x99, a);
        assert_eq!(r.find(Layer::Rmw, 0, 0x99), Some(a));
        assert_eq!(r.items.len(), 2);
    }

    #[test]
    fn start_ends_the_lifetime_of_the_previous_object() {
        let mut r: Registry<O> = Registry::default();
        let a = r.get(0, 0x10);
        let b = r.start(Layer::Rcl, 0, 0x10, O(0, 0x10));
        assert_ne!(a, b);
        assert_eq!(r.get(0, 0x10), b);
        assert_eq!(r.items, vec![O(0, 0x10), O(0, 0x10)]);
    }
}
