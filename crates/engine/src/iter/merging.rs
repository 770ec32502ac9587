//! Merges sorted children into one sorted stream, as LevelDB's
//! `MergingIterator`: a linear scan for the smallest (or largest) child,
//! which beats a heap for the handful of children an LSM read has.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::format::key;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator { children, current: None, direction: Direction::Forward }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() && best.is_none_or(|b| key::compare(c.key(), self.children[b].key()) == Ordering::Less) {
                best = Some(i);
            }
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if c.valid() && best.is_none_or(|b| key::compare(c.key(), self.children[b].key()) == Ordering::Greater) {
                best = Some(i);
            }
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek_for_prev(target));
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Every other child is at or before key(); move each past it.
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&k);
                    if c.valid() && key::compare(&k, c.key()) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Every other child is after key(); move each before it.
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&k);
                    if c.valid() && key::compare(&k, c.key()) == Ordering::Equal {
                        c.prev();
                    }
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.current.map(|c| self.children[c].key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.current.map(|c| self.children[c].value()).unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
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
