//! Merges sorted children into one sorted stream (LevelDB's and RocksDB's
//! `MergingIterator`).
//!
//! Each child's validity and key are cached beside it (RocksDB's
//! `IteratorWrapper`), so choosing the next entry compares cached slices
//! instead of calling into every child. The iterator also remembers the
//! runner-up, the best child other than the current one: the others do not
//! move while the current one steps, so after a step one comparison with
//! the runner-up says whether the current child still comes first, and only
//! when it does not are all children compared again. Long runs from one
//! child, the common case of a scan, cost one comparison per entry.

use std::cmp::Ordering;
use std::ptr::NonNull;

use super::InternalIterator;
use crate::error::Result;
use crate::format::key;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A child and its cached key (`None` when the child is not valid).
struct Child {
    iter: Box<dyn InternalIterator>,
    /// `iter.key()` as of the last positioning call. It points into memory
    /// the child owns or keeps alive (its heap allocation, a block, a
    /// memtable), which stays put until the child is positioned again; every
    /// positioning call goes through `Child`, which refreshes this after it.
    key: Option<NonNull<[u8]>>,
}

// SAFETY: `key` is a pointer into data the boxed child (which is `Send`)
// owns or keeps alive; it is only read through `&self`.
unsafe impl Send for Child {}

impl Child {
    fn new(iter: Box<dyn InternalIterator>) -> Self {
        let mut c = Child { iter, key: None };
        c.update();
        c
    }

    #[inline]
    fn update(&mut self) {
        self.key = if self.iter.valid() { Some(NonNull::from(self.iter.key())) } else { None };
    }

    #[inline]
    fn valid(&self) -> bool {
        self.key.is_some()
    }

    /// REQUIRES: `valid()`.
    #[inline]
    fn key(&self) -> &[u8] {
        match self.key {
            // SAFETY: see the field: the child has not moved since `update`.
            Some(k) => unsafe { k.as_ref() },
            None => &[],
        }
    }

    fn step(&mut self, f: impl FnOnce(&mut dyn InternalIterator)) {
        f(&mut *self.iter);
        self.update();
    }
}

pub struct MergingIterator {
    children: Vec<Child>,
    current: Option<usize>,
    /// The best valid child other than `current` in the current direction
    /// (smallest forward, largest in reverse), if there is one.
    runner_up: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children: children.into_iter().map(Child::new).collect(),
            current: None,
            runner_up: None,
            direction: Direction::Forward,
        }
    }

    /// Whether `a` comes before `b` in the current direction.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let o = key::compare(self.children[a].key(), self.children[b].key());
        match self.direction {
            Direction::Forward => o == Ordering::Less,
            Direction::Reverse => o == Ordering::Greater,
        }
    }

    /// Finds the best and the runner-up among all children. Ties (which
    /// only damaged data makes) go to the earlier child forward and the
    /// later one in reverse, as LevelDB's linear scans do.
    fn choose(&mut self) {
        let (mut best, mut second): (Option<usize>, Option<usize>) = (None, None);
        let n = self.children.len();
        for j in 0..n {
            let i = if self.direction == Direction::Forward { j } else { n - 1 - j };
            if !self.children[i].valid() {
                continue;
            }
            match best {
                None => best = Some(i),
                Some(b) if self.before(i, b) => {
                    second = best;
                    best = Some(i);
                }
                Some(_) => {
                    if second.is_none_or(|s| self.before(i, s)) {
                        second = Some(i);
                    }
                }
            }
        }
        self.current = best;
        self.runner_up = second;
    }

    /// After the current child stepped: keeps it if it still comes first.
    #[inline]
    fn after_step(&mut self, cur: usize) {
        match self.runner_up {
            None => {
                if !self.children[cur].valid() {
                    self.current = None;
                }
            }
            Some(r) => {
                if !self.children[cur].valid() || self.before(r, cur) {
                    self.choose();
                }
            }
        }
    }

    fn position_all(&mut self, direction: Direction, f: impl Fn(&mut dyn InternalIterator)) {
        for c in &mut self.children {
            c.step(&f);
        }
        self.direction = direction;
        self.choose();
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.position_all(Direction::Forward, |c| c.seek_to_first());
    }

    fn seek_to_last(&mut self) {
        self.position_all(Direction::Reverse, |c| c.seek_to_last());
    }

    fn seek(&mut self, target: &[u8]) {
        self.position_all(Direction::Forward, |c| c.seek(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.position_all(Direction::Reverse, |c| c.seek_for_prev(target));
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Every other child is at or before key(); move each past it.
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.step(|it| {
                        it.seek(&k);
                        if it.valid() && key::compare(&k, it.key()) == Ordering::Equal {
                            it.next();
                        }
                    });
                }
            }
            self.direction = Direction::Forward;
            self.children[cur].step(|it| it.next());
            return self.choose();
        }
        self.children[cur].step(|it| it.next());
        self.after_step(cur);
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Every other child is after key(); move each before it.
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.step(|it| {
                        it.seek_for_prev(&k);
                        if it.valid() && key::compare(&k, it.key()) == Ordering::Equal {
                            it.prev();
                        }
                    });
                }
            }
            self.direction = Direction::Reverse;
            self.children[cur].step(|it| it.prev());
            return self.choose();
        }
        self.children[cur].step(|it| it.prev());
        self.after_step(cur);
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[], |c| self.children[c].key())
    }

    fn origin(&self) -> Option<(&str, u64)> {
        self.current.and_then(|c| self.children[c].iter.origin())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[], |c| self.children[c].iter.value())
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.iter.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::key::{internal_key, ValueType};
    use crate::iter::testing::VecIter;

    fn ik(k: &str, s: u64) -> Vec<u8> {
        internal_key(k.as_bytes(), s, ValueType::Put)
    }

    fn merged() -> MergingIterator {
        let a = VecIter::new(vec![(ik("a", 1), b"a".to_vec()), (ik("d", 1), b"d".to_vec())]);
        let b = VecIter::new(vec![(ik("b", 2), b"b".to_vec()), (ik("d", 5), b"d5".to_vec())]);
        let c = VecIter::new(vec![]);
        let d = VecIter::new(vec![(ik("c", 3), b"c".to_vec()), (ik("e", 1), b"e".to_vec())]);
        MergingIterator::new(vec![Box::new(a), Box::new(b), Box::new(c), Box::new(d)])
    }

    fn vals(it: &MergingIterator) -> String {
        String::from_utf8(it.value().to_vec()).unwrap()
    }

    #[test]
    fn forward_and_backward_give_the_total_order() {
        let mut it = merged();
        it.seek_to_first();
        let mut fwd = vec![];
        while it.valid() {
            fwd.push(vals(&it));
            it.next();
        }
        assert_eq!(fwd, ["a", "b", "c", "d5", "d", "e"]);
        it.seek_to_last();
        let mut back = vec![];
        while it.valid() {
            back.push(vals(&it));
            it.prev();
        }
        assert_eq!(back, ["e", "d", "d5", "c", "b", "a"]);
    }

    #[test]
    fn direction_changes_keep_position() {
        let mut it = merged();
        it.seek(&ik("c", 10));
        assert_eq!(vals(&it), "c");
        it.prev();
        assert_eq!(vals(&it), "b");
        it.next();
        assert_eq!(vals(&it), "c");
        it.next();
        assert_eq!(vals(&it), "d5");
        it.prev();
        assert_eq!(vals(&it), "c");
        it.seek_for_prev(&ik("d", 3));
        assert_eq!(vals(&it), "d5");
        it.next();
        assert_eq!(vals(&it), "d");
    }
}
