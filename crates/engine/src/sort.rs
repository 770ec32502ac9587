//! One sort for the whole engine.
//!
//! The standard library's sorts are generic over the element and the
//! comparison: every call site with its own closure or element type gets
//! its own copy of driftsort (stable) or ipnsort (unstable), 4 to 19 KB of
//! WebAssembly each. The engine sorted at some thirty sites, and those
//! copies were the largest part of the shipped module (126 KB of 931 KB of
//! code before wasm-opt, `core::slice::sort`). Here there is one copy: a
//! stable sort of positions (`usize`) through a `dyn` comparison, after
//! which the elements are put in that order by swaps (a few hundred bytes
//! per element type). A comparison costs an indirect call more; nothing
//! the engine sorts is on a path where that shows (a `MultiGet`'s keys, a
//! table's entries before they are written, a level's files).

use std::cmp::Ordering;

/// The positions `0..n` in the order `cmp` puts them, stably (equal
/// positions keep their order). The one instantiation of the standard
/// library's sort.
#[inline(never)]
pub fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..n).collect();
    positions.sort_by(|&a, &b| cmp(a, b));
    positions
}

/// Sorts `v` by `cmp`, stably.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let positions = order(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(v, positions);
}

/// Sorts `v` by the key `f` gives each element, stably.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut f: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| f(a).cmp(&f(b)));
}

/// Sorts `v` in ascending order, stably.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, |a, b| a.cmp(b));
}

/// Puts `v` in the order `positions` gives: element `k` becomes the one at
/// `positions[k]` before. Walks each cycle of the permutation once, with
/// one swap per element moved.
fn permute<T>(v: &mut [T], mut positions: Vec<usize>) {
    debug_assert_eq!(v.len(), positions.len());
    for start in 0..v.len() {
        let mut k = start;
        loop {
            let from = positions[k];
            positions[k] = k;
            if from == start {
                break;
            }
            v.swap(k, from);
            k = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (the tests need no other crate).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn matches_the_standard_stable_sort_on_random_input() {
        let mut seed = 7;
        for len in [0usize, 1, 2, 3, 5, 16, 33, 100, 1000] {
            for round in 0..20 {
                // Few distinct keys: stability shows (the tags must keep their order).
                let keys = 1 + (round % 5) as u64 * 7;
                let v: Vec<(u64, usize)> = (0..len).map(|i| (lcg(&mut seed) % keys, i)).collect();
                let mut want = v.clone();
                want.sort_by_key(|e| e.0);
                let mut got = v.clone();
                sort_by(&mut got, |a, b| a.0.cmp(&b.0));
                assert_eq!(got, want, "len {len} round {round}");
                let mut by_key = v;
                sort_by_key(&mut by_key, |e| e.0);
                assert_eq!(by_key, want);
            }
        }
    }

    #[test]
    fn permute_applies_any_permutation() {
        let mut seed = 11;
        for len in 0..40usize {
            let mut positions: Vec<usize> = (0..len).collect();
            for i in (1..len).rev() {
                positions.swap(i, (lcg(&mut seed) as usize) % (i + 1));
            }
            let v: Vec<String> = (0..len).map(|i| format!("e{i}")).collect();
            let want: Vec<String> = positions.iter().map(|&p| v[p].clone()).collect();
            let mut got = v;
            permute(&mut got, positions);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn sorts_owned_values_without_losing_or_duplicating_any() {
        let mut v: Vec<Vec<u8>> =
            vec![b"pear".to_vec(), b"apple".to_vec(), b"fig".to_vec(), b"apple".to_vec(), b"".to_vec()];
        sort(&mut v);
        assert_eq!(v, vec![b"".to_vec(), b"apple".to_vec(), b"apple".to_vec(), b"fig".to_vec(), b"pear".to_vec()]);
        let mut desc = vec![3u64, 9, 1, 9, 4];
        sort_by(&mut desc, |a, b| b.cmp(a));
        assert_eq!(desc, vec![9, 9, 4, 3, 1]);
    }
}
