//! The archive a RocksDB export travels in: POSIX ustar (a 512-byte
//! header per file, its bytes padded to 512, two zero blocks at the end),
//! so that `tar -xf` gives the table files `ldb ingest_extern_sst` takes.
//! Reading takes regular files; directories, links, pax and GNU extended
//! headers (their names stay the ustar header's, cut to 100 bytes) and
//! macOS's AppleDouble companions (`._name`) are skipped.

use crate::error::{Error, Result};

const BLOCK: usize = 512;

/// Appends a ustar header for a regular file `name` of `size` bytes.
pub fn put_header(out: &mut Vec<u8>, name: &str, size: u64) {
    let mut h = [0u8; BLOCK];
    let field = |h: &mut [u8; BLOCK], at: usize, len: usize, v: &[u8]| {
        h[at..at + v.len().min(len)].copy_from_slice(&v[..v.len().min(len)])
    };
    field(&mut h, 0, 100, name.as_bytes());
    field(&mut h, 100, 8, b"0000644\0");
    field(&mut h, 108, 8, b"0000000\0");
    field(&mut h, 116, 8, b"0000000\0");
    field(&mut h, 124, 12, format!("{size:011o}\0").as_bytes());
    field(&mut h, 136, 12, b"00000000000\0");
    h[156] = b'0';
    field(&mut h, 257, 6, b"ustar\0");
    field(&mut h, 263, 2, b"00");
    // The checksum: the header's bytes summed with its own field as spaces.
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    field(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    out.extend_from_slice(&h);
}

/// Zeros up to the next 512-byte boundary after a file of `size` bytes.
pub fn put_padding(out: &mut Vec<u8>, size: u64) {
    let rem = (size % BLOCK as u64) as usize;
    if rem != 0 {
        out.resize(out.len() + BLOCK - rem, 0);
    }
}

/// The archive's end: two zero blocks.
pub fn put_end(out: &mut Vec<u8>) {
    out.resize(out.len() + 2 * BLOCK, 0);
}

/// Whether `bytes` start like a ustar archive (or an empty one: its end
/// blocks).
pub fn is_tar(bytes: &[u8]) -> bool {
    bytes.len() >= BLOCK && (&bytes[257..262] == b"ustar" || bytes[..BLOCK].iter().all(|&b| b == 0))
}

fn octal(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

/// Reads an archive as it arrives, one piece after another, and gives each
/// regular file whole.
#[derive(Default)]
pub struct TarReader {
    buf: Vec<u8>,
    /// The file being read: its name and size.
    current: Option<(String, u64)>,
    ended: bool,
    /// Regular files read (kept or not by the caller) and entries skipped.
    pub files: usize,
    pub skipped: usize,
}

impl TarReader {
    /// Takes the next piece; returns the files it completed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
        let bad = |why: String| Error::corruption("RocksDB export archive", 0, why);
        if self.ended {
            return Ok(Vec::new()); // what follows the end blocks is not read
        }
        self.buf.extend_from_slice(bytes);
        let mut files = Vec::new();
        let mut at = 0;
        loop {
            if self.ended {
                break;
            }
            match &self.current {
                None => {
                    if self.buf.len() - at < BLOCK {
                        break;
                    }
                    let h = &self.buf[at..at + BLOCK];
                    at += BLOCK;
                    if h.iter().all(|&b| b == 0) {
                        self.ended = true;
                        break;
                    }
                    let stored =
                        octal(&h[148..156]).ok_or_else(|| bad("a header's checksum is not a number".into()))?;
                    let sum: u64 = h
                        .iter()
                        .enumerate()
                        .map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u64::from(b) })
                        .sum();
                    if sum != stored {
                        return Err(bad(format!("a header whose checksum is {stored}, its bytes sum to {sum}")));
                    }
                    let size = octal(&h[124..136]).ok_or_else(|| bad("a header whose size is not a number".into()))?;
                    let end = h[..100].iter().position(|&b| b == 0).unwrap_or(100);
                    let mut name = String::from_utf8_lossy(&h[..end]).into_owned();
                    if &h[257..262] == b"ustar" && h[345] != 0 {
                        let end = h[345..500].iter().position(|&b| b == 0).unwrap_or(155);
                        name = format!("{}/{name}", String::from_utf8_lossy(&h[345..345 + end]));
                    }
                    let base = name.rsplit('/').next().unwrap_or("");
                    match h[156] {
                        b'0' | 0 if !base.starts_with("._") => {
                            self.files += 1;
                            self.current = Some((name, size));
                        }
                        // Directories, links, extended headers, AppleDouble
                        // files: skipped with their bytes.
                        _ => {
                            self.skipped += 1;
                            self.current = Some((String::new(), size));
                        }
                    }
                }
                Some((name, size)) => {
                    let padded = size.div_ceil(BLOCK as u64) * BLOCK as u64;
                    if ((self.buf.len() - at) as u64) < padded {
                        break;
                    }
                    if !name.is_empty() {
                        files.push((name.clone(), self.buf[at..at + *size as usize].to_vec()));
                    }
                    at += padded as usize;
                    self.current = None;
                }
            }
        }
        if self.ended {
            self.buf = Vec::new();
        } else {
            self.buf.drain(..at);
        }
        Ok(files)
    }

    /// Whether the archive's end was read (and nothing is cut short).
    pub fn finished(&self) -> bool {
        self.ended && self.current.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_back_whatever_the_pieces() {
        let mut out = Vec::new();
        let files = [("000001.sst", vec![1u8; 1000]), ("000002.sst", vec![2u8; 512]), ("000003.sst", vec![])];
        for (name, bytes) in &files {
            put_header(&mut out, name, bytes.len() as u64);
            out.extend_from_slice(bytes);
            put_padding(&mut out, bytes.len() as u64);
        }
        put_end(&mut out);
        assert!(is_tar(&out));
        for piece in [1, 7, 512, 513, out.len()] {
            let mut r = TarReader::default();
            let mut got = Vec::new();
            for p in out.chunks(piece) {
                got.extend(r.push(p).unwrap());
            }
            assert!(r.finished());
            assert_eq!(got.len(), 3);
            for ((n, b), (en, eb)) in got.iter().zip(&files) {
                assert_eq!(n, en);
                assert_eq!(b, eb);
            }
        }
        let mut bad = out.clone();
        bad[10] ^= 1;
        assert!(TarReader::default().push(&bad).is_err());
        // What follows the end is not read (nor kept).
        let mut r = TarReader::default();
        let mut more = out.clone();
        more.extend_from_slice(&[7u8; 4096]);
        assert_eq!(r.push(&more).unwrap().len(), 3);
        assert!(r.push(&[1u8; 1 << 16]).unwrap().is_empty());
        assert!(r.buf.is_empty() && r.finished());
    }

    #[test]
    fn extended_headers_and_apple_double_files_are_skipped() {
        let mut out = Vec::new();
        for (name, kind, bytes) in [
            ("PaxHeader/t.sst", b'x', &b"30 path=a-long-name/t.sst\n"[..]),
            ("._t.sst", b'0', b"meta"),
            ("t.sst", b'0', b"table"),
        ] {
            let start = out.len();
            put_header(&mut out, name, bytes.len() as u64);
            out[start + 156] = kind;
            // The checksum again, with the type changed.
            out[start + 148..start + 156].fill(b' ');
            let sum: u32 = out[start..start + BLOCK].iter().map(|&b| u32::from(b)).sum();
            out[start + 148..start + 156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            out.extend_from_slice(bytes);
            put_padding(&mut out, bytes.len() as u64);
        }
        put_end(&mut out);
        let mut r = TarReader::default();
        let got = r.push(&out).unwrap();
        assert_eq!(got, vec![("t.sst".to_string(), b"table".to_vec())]);
        assert_eq!((r.files, r.skipped), (1, 2));
    }
}
