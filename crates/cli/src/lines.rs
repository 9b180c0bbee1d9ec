//! Reading input files line by line with bounded memory: a line longer
//! than the limit is skipped (and counted), never held whole.

use std::io::BufRead;

/// One line read by [`read_bounded_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum BoundedLine {
    /// A line (in the buffer, without its line ending).
    Line,
    /// A line longer than the maximum, skipped; holds its length.
    TooLong(u64),
    /// End of input.
    Eof,
}

/// Reads one line into `buf` (cleared first) without ever holding more than
/// `max` bytes of it: a longer line is consumed and reported as
/// [`BoundedLine::TooLong`]. Strips `\n` and `\r\n`. Adds the bytes consumed
/// to `consumed`.
pub fn read_bounded_line<R: BufRead + ?Sized>(
    reader: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
    consumed: &mut u64,
) -> std::io::Result<BoundedLine> {
    buf.clear();
    let mut len: u64 = 0;
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len() as u64;
        if !too_long {
            if buf.len() + part.len() <= max + 1 {
                // One extra byte may be a '\r' of a "\r\n" ending.
                buf.extend_from_slice(part);
            } else {
                too_long = true;
                buf.clear();
            }
        }
        reader.consume(used);
        *consumed += used as u64;
        if done {
            break;
        }
    }
    if !any {
        return Ok(BoundedLine::Eof);
    }
    if !too_long && buf.last() == Some(&b'\r') {
        buf.pop();
        len -= 1;
    }
    if too_long || buf.len() > max {
        buf.clear();
        return Ok(BoundedLine::TooLong(len));
    }
    Ok(BoundedLine::Line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines() {
        let data = b"ab\r\n\nxxxxxxxxxx\nlast";
        let mut r = &data[..];
        let mut buf = Vec::new();
        let mut n = 0;
        let want: [(BoundedLine, &[u8]); 5] = [
            (BoundedLine::Line, b"ab"),
            (BoundedLine::Line, b""),
            (BoundedLine::TooLong(10), b""),
            (BoundedLine::Line, b"last"),
            (BoundedLine::Eof, b""),
        ];
        for (outcome, line) in want {
            assert_eq!(
                read_bounded_line(&mut r, 4, &mut buf, &mut n).unwrap(),
                outcome
            );
            assert_eq!(buf, line);
        }
        assert_eq!(n, data.len() as u64);
    }
}
