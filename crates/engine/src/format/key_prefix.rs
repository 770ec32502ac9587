//! Integer stand-ins for sorted keys, so that a binary search over them
//! compares integers and only rarely whole keys (the flat index's
//! separators, a level's files).
//!
//! Keys that share a prefix would all map to the same integer if it were
//! made of their first bytes: db_bench's `%016d` keys all begin with
//! `00000000` below 10^8, and a sublevel's keys all begin with its name.
//! So the prefix the keys share is set aside (`common`) and each key's
//! integer is the 8 bytes that follow it, big-endian, zero-padded. For a
//! target that begins with `common` too, `prefix(a) < prefix(b)` implies
//! `a < b` (and `>` likewise); equal prefixes say nothing, and the caller
//! compares whole keys. A target that does not begin with `common` gets
//! no integer ([`KeyPrefixes::of`] is `None`): the caller compares whole
//! keys all the way.

/// The integers of a sorted list of user keys.
#[derive(Default)]
pub struct KeyPrefixes {
    /// The prefix every key shares.
    common: Box<[u8]>,
    values: Vec<u64>,
}

/// The 8 bytes of `b` from `skip` on, big-endian, zero-padded.
#[inline]
fn be8_from(b: &[u8], skip: usize) -> u64 {
    let rest = b.get(skip..).unwrap_or(&[]);
    let mut out = [0u8; 8];
    let n = rest.len().min(8);
    out[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(out)
}

impl KeyPrefixes {
    /// The integers of `keys` (user keys, in non-decreasing order: the
    /// prefix the first and last share is then the one all share).
    pub fn new<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> KeyPrefixes {
        let n = keys.len();
        let (Some(first), Some(last)) = (keys.clone().next(), keys.clone().last()) else {
            return KeyPrefixes::default();
        };
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let common: Box<[u8]> = first[..shared].into();
        let mut values = Vec::with_capacity(n);
        values.extend(keys.map(|k| be8_from(k, shared)));
        KeyPrefixes { common, values }
    }

    /// The integer of key `i` (for tests: searches go through `below`).
    #[cfg(test)]
    fn get(&self, i: usize) -> u64 {
        self.values[i]
    }

    /// The integer of `user_key` as a target of a search, if it begins
    /// with the keys' common prefix.
    #[inline]
    pub fn of(&self, user_key: &[u8]) -> Option<u64> {
        user_key.starts_with(&self.common).then(|| be8_from(user_key, self.common.len()))
    }

    /// Whether key `i` is below the target whose integer is `prefix` (from
    /// [`KeyPrefixes::of`]): by the integers where they differ, else by
    /// `whole`, the caller's comparison of whole keys.
    #[inline]
    pub fn below(&self, i: usize, prefix: Option<u64>, whole: impl FnOnce() -> bool) -> bool {
        match prefix.map(|p| self.values[i].cmp(&p)) {
            Some(std::cmp::Ordering::Less) => true,
            Some(std::cmp::Ordering::Greater) => false,
            _ => whole(),
        }
    }

    /// The first of keys `lo..hi` not below the target (`hi` if none): a
    /// binary search by [`KeyPrefixes::below`], `whole(i)` comparing key
    /// `i` with the target whole.
    #[inline]
    pub fn search(&self, mut lo: usize, mut hi: usize, prefix: Option<u64>, whole: impl Fn(usize) -> bool) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.below(mid, prefix, || whole(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_order_as_keys_do_past_the_common_prefix() {
        let keys: Vec<Vec<u8>> = (0..2000u32).map(|i| format!("{:016}", i * 7).into_bytes()).collect();
        let p = KeyPrefixes::new(keys.iter().map(|k| &k[..]));
        assert_eq!(&*p.common, b"00000000000"); // 0 and 13,993 share eleven zeros
        for t in (0..15000u32).step_by(3).map(|i| format!("{i:016}").into_bytes()) {
            let tp = p.of(&t).unwrap();
            for (i, k) in keys.iter().enumerate() {
                match p.get(i).cmp(&tp) {
                    std::cmp::Ordering::Less => assert!(k < &t),
                    std::cmp::Ordering::Greater => assert!(k > &t),
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
    }

    #[test]
    fn a_target_outside_the_common_prefix_has_no_integer() {
        let keys: [&[u8]; 3] = [b"!users!a", b"!users!b\0", b"!users!c"];
        let p = KeyPrefixes::new(keys.iter().copied());
        assert_eq!(&*p.common, b"!users!");
        assert_eq!(p.of(b"!users"), None);
        assert_eq!(p.of(b"!posts!a"), None);
        assert_eq!(p.of(b"!users!"), Some(0));
        // Shorter keys pad with zeros: "b" and "b\0" tie, and the caller
        // compares them whole.
        assert_eq!(p.get(1), p.of(b"!users!b").unwrap());
        assert!(p.get(0) < p.get(1) && p.get(1) < p.get(2));
    }

    #[test]
    fn no_keys_and_one_key() {
        let none: [&[u8]; 0] = [];
        let p = KeyPrefixes::new(none.iter().copied());
        assert_eq!(p.of(b"anything"), Some(u64::from_be_bytes(*b"anything")));
        let one: [&[u8]; 1] = [b"only"];
        let p = KeyPrefixes::new(one.iter().copied());
        assert_eq!(p.of(b"only"), Some(0));
        assert_eq!(p.of(b"other"), None);
    }
}
