//! The exchange buffer: one buffer in wasm memory per database, through
//! which a `get` or a `multiGet` is a single call into wasm.
//!
//! JavaScript writes the request (the keys) into the buffer through a view
//! of wasm memory, calls one export with the sizes, and reads the answer
//! (where the values are) back from the buffer; no `malloc`/`free` calls
//! around it as wasm-bindgen's argument passing would make. Handles of
//! results JavaScript has released ride along in the same buffer and are
//! let go at the start of the next call, so releasing a result costs no
//! crossing of its own in a loop of reads.
//!
//! ## Format
//! Little-endian `u32`s; offsets in bytes from the buffer's start:
//! ```text
//! 0     releases   how many handles follow at 16 (JS writes, the call zeroes)
//! 4     out0       get: value offset in memory; multiGet: layout offset
//! 8     out1       get: value length (ABSENT = no value); multiGet: 0
//! 12    0
//! 16    handle*    RELEASE_SLOTS slots of released results' handles
//! 256   request    get: the key
//!                  multiGet: count × u32 key lengths, then the keys back to back
//! ```
//! A multiGet layout (see `results.rs`) is two `u32`s per key, offset and
//! length, owned by the result and valid until it is released.

use crate::error::BindingError;

// The offsets of the format above; siltdb reads them from `contract.rs`.
pub(crate) const RELEASES: usize = 0;
pub(crate) const OUT0: usize = 4;
pub(crate) const OUT1: usize = 8;
pub(crate) const HANDLES: usize = 16;
/// Released handles the header has room for; siltdb sends them on with an
/// explicit `releasePinned` call when it has more.
pub(crate) const RELEASE_SLOTS: usize = 60;
/// Where a request starts.
pub(crate) const REQUEST: usize = HANDLES + 4 * RELEASE_SLOTS;
/// Size of a new buffer: a request of a few dozen short keys fits.
const INITIAL: usize = 4096;

/// The bytes JavaScript writes requests into. Its address changes only in
/// [`Exchange::reserve`], which siltdb calls before writing a request that
/// does not fit.
pub struct Exchange {
    buf: Vec<u8>,
}

impl Default for Exchange {
    fn default() -> Self {
        Exchange { buf: vec![0; INITIAL] }
    }
}

impl Exchange {
    /// Grows the buffer to at least `min` bytes (keeping its contents) and
    /// returns its address, which JavaScript uses for its views.
    pub fn reserve(&mut self, min: usize) -> usize {
        if self.buf.len() < min {
            let len = min.max(self.buf.len() * 2);
            self.buf.resize(len, 0);
        }
        self.buf.as_ptr() as usize
    }

    fn word(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.buf[at], self.buf[at + 1], self.buf[at + 2], self.buf[at + 3]])
    }

    fn set_word(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// The released handles JavaScript wrote, emptying the list. More than
    /// [`RELEASE_SLOTS`] is a bug in siltdb; the excess is ignored rather
    /// than read past the slots (those results stay pinned).
    pub fn take_releases(&mut self) -> Vec<u32> {
        let n = (self.word(RELEASES) as usize).min(RELEASE_SLOTS);
        self.set_word(RELEASES, 0);
        (0..n).map(|i| self.word(HANDLES + 4 * i)).collect()
    }

    /// The key of a `get` request of `len` bytes.
    pub fn key(&self, len: usize) -> Result<&[u8], BindingError> {
        REQUEST
            .checked_add(len)
            .filter(|&end| end <= self.buf.len())
            .map(|end| &self.buf[REQUEST..end])
            .ok_or_else(|| BindingError::invalid("get: the key overruns the exchange buffer"))
    }

    /// The `count` keys of a `multiGet` request whose keys take `key_bytes`.
    pub fn keys(&self, count: usize, key_bytes: usize) -> Result<Vec<&[u8]>, BindingError> {
        let bad = |what: &str| BindingError::invalid(format!("multiGet: {what}"));
        let keys_at = count.checked_mul(4).and_then(|n| n.checked_add(REQUEST)).ok_or_else(|| bad("too many keys"))?;
        let end = keys_at.checked_add(key_bytes).ok_or_else(|| bad("too many key bytes"))?;
        if end > self.buf.len() {
            return Err(bad("the keys overrun the exchange buffer"));
        }
        let mut out = Vec::with_capacity(count);
        let mut at = keys_at;
        for i in 0..count {
            let len = self.word(REQUEST + 4 * i) as usize;
            let next = at.checked_add(len).filter(|&n| n <= end).ok_or_else(|| bad("key lengths overrun the keys"))?;
            out.push(&self.buf[at..next]);
            at = next;
        }
        if at != end {
            return Err(bad("the key bytes are longer than the keys"));
        }
        Ok(out)
    }

    /// Writes the two answer words.
    pub fn answer(&mut self, out0: u32, out1: u32) {
        self.set_word(OUT0, out0);
        self.set_word(OUT1, out1);
    }
}

/// What JavaScript does to the buffer, for the binding's native tests.
#[cfg(test)]
impl Exchange {
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn write_at(&mut self, at: usize, bytes: &[u8]) {
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    pub(crate) fn read_word(&self, at: usize) -> u32 {
        self.word(at)
    }

    pub(crate) fn write_releases(&mut self, handles: &[u32]) {
        self.set_word(RELEASES, handles.len() as u32);
        for (i, &h) in handles.iter().enumerate() {
            self.set_word(HANDLES + 4 * i, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_request(ex: &mut Exchange, request: &[u8]) {
        ex.reserve(REQUEST + request.len());
        ex.write_at(REQUEST, request);
    }

    fn multi_get_request(keys: &[&[u8]]) -> Vec<u8> {
        let mut r = Vec::new();
        for k in keys {
            r.extend_from_slice(&(k.len() as u32).to_le_bytes());
        }
        for k in keys {
            r.extend_from_slice(k);
        }
        r
    }

    #[test]
    fn keys_come_back_as_written_including_empty_ones() {
        let mut ex = Exchange::default();
        let keys: [&[u8]; 4] = [b"alpha", b"", b"c", &[0xff; 300]];
        let request = multi_get_request(&keys);
        with_request(&mut ex, &request);
        assert_eq!(ex.keys(4, 306).unwrap(), keys.to_vec());
        assert_eq!(ex.keys(0, 0).unwrap(), Vec::<&[u8]>::new());
    }

    #[test]
    fn lengths_that_do_not_add_up_are_refused() {
        let mut ex = Exchange::default();
        with_request(&mut ex, &multi_get_request(&[b"ab", b"cd"]));
        assert_eq!(ex.keys(2, 3).unwrap_err().code, "InvalidArgument"); // shorter than the keys
        assert_eq!(ex.keys(2, 5).unwrap_err().code, "InvalidArgument"); // longer than the keys
        assert_eq!(ex.keys(1 << 30, 0).unwrap_err().code, "InvalidArgument");
        assert_eq!(ex.keys(usize::MAX / 2, usize::MAX).unwrap_err().code, "InvalidArgument");
        assert!(ex.key(ex.len()).is_err());
    }

    #[test]
    fn reserve_grows_keeping_the_contents_and_moves_only_when_it_grows() {
        let mut ex = Exchange::default();
        with_request(&mut ex, b"key");
        let at = ex.reserve(100);
        assert_eq!(ex.reserve(INITIAL), at);
        ex.reserve(INITIAL * 10);
        assert!(ex.len() >= INITIAL * 10);
        assert_eq!(ex.key(3).unwrap(), b"key");
    }

    #[test]
    fn releases_are_taken_once_and_capped_at_the_slots() {
        let mut ex = Exchange::default();
        ex.write_releases(&[7, 9, 11]);
        assert_eq!(ex.take_releases(), [7, 9, 11]);
        assert_eq!(ex.take_releases(), Vec::<u32>::new());
        ex.set_word(RELEASES, 1000);
        assert_eq!(ex.take_releases().len(), RELEASE_SLOTS);
    }

    #[test]
    fn answers_land_in_the_two_out_words() {
        let mut ex = Exchange::default();
        ex.answer(0x1234, u32::MAX);
        assert_eq!([ex.word(OUT0), ex.word(OUT1)], [0x1234, u32::MAX]);
    }
}
