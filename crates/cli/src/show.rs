//! Keys and values as the command line shows and takes them: `utf8` (text,
//! with bytes that are not printable UTF-8 escaped as `\xNN`), `hex`, or
//! `auto` (text when the bytes are printable UTF-8, else hex with a `0x`).

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text when printable UTF-8, else hex after "0x".
    Auto,
    /// Text, other bytes as \xNN.
    Utf8,
    /// Hex digits.
    Hex,
}

fn printable(s: &str) -> bool {
    s.chars().all(|c| !c.is_control() || c == ' ')
}

fn hex_to(out: &mut String, b: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * b.len());
    for &x in b {
        out.push(DIGITS[(x >> 4) as usize] as char);
        out.push(DIGITS[(x & 15) as usize] as char);
    }
}

/// `b` as `format` shows it.
pub fn show(b: &[u8], format: Format) -> String {
    let mut out = String::new();
    show_to(&mut out, b, format);
    out
}

/// Appends `b` as `format` shows it to `out` (a scan's lines: no string
/// made per key or per byte).
pub fn show_to(out: &mut String, b: &[u8], format: Format) {
    match format {
        Format::Hex => hex_to(out, b),
        Format::Auto => match std::str::from_utf8(b) {
            Ok(s) if printable(s) && !s.starts_with("0x") => out.push_str(s),
            _ => {
                out.push_str("0x");
                hex_to(out, b);
            }
        },
        Format::Utf8 => {
            use std::fmt::Write;
            for chunk in b.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\t' => out.push_str("\\t"),
                        '\r' => out.push_str("\\r"),
                        c if c.is_ascii_control() => {
                            let _ = write!(out, "\\x{:02x}", c as u32);
                        }
                        c if c.is_control() => {
                            let _ = write!(out, "{}", c.escape_unicode());
                        }
                        c => out.push(c),
                    }
                }
                for x in chunk.invalid() {
                    let _ = write!(out, "\\x{x:02x}");
                }
            }
        }
    }
}

/// A key given on the command line: hex after "0x" (or with `--hex`), else its UTF-8 bytes.
pub fn parse(s: &str, hex_keys: bool) -> Result<Vec<u8>, String> {
    let digits = if hex_keys { Some(s) } else { s.strip_prefix("0x") };
    let Some(d) = digits else { return Ok(s.as_bytes().to_vec()) };
    if d.len() % 2 != 0 || !d.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "{s:?} is not hex (an even number of 0-9a-f digits): give a key as text, or as hex after 0x"
        ));
    }
    Ok((0..d.len()).step_by(2).map(|i| u8::from_str_radix(&d[i..i + 2], 16).unwrap_or(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_text_escapes_and_hex() {
        assert_eq!(show(b"hello", Format::Auto), "hello");
        assert_eq!(show(&[0, 1, 255], Format::Auto), "0x0001ff");
        assert_eq!(show(b"0x12", Format::Auto), "0x30783132", "text that looks like hex is shown as hex");
        assert_eq!(show(b"a\nb\\\xff", Format::Utf8), "a\\nb\\\\\\xff");
        assert_eq!(show(b"AB", Format::Hex), "4142");
    }

    #[test]
    fn parses_text_and_hex() {
        assert_eq!(parse("abc", false).unwrap(), b"abc");
        assert_eq!(parse("0x00ff", false).unwrap(), vec![0, 255]);
        assert_eq!(parse("00ff", true).unwrap(), vec![0, 255]);
        assert!(parse("0xabc", false).is_err());
        assert!(parse("zz", true).is_err());
    }
}
