//! `-z`: COMPRESSED records (type 81) as perf 6.1 writes them.
//!
//! perf compresses what it reads from the ring buffers into one zstd stream
//! cut into COMPRESSED records; the synthesized prologue and the
//! FINISHED_ROUND records stay uncompressed. prec compresses each chunk of
//! ring data (cut at record boundaries) as a complete zstd frame: a stream of
//! concatenated frames is what perf's `ZSTD_DStream` decodes too. ruzstd's
//! encoder implements only its fastest level, so every `-z` level compresses
//! like zstd level 1; the requested level is still what the COMPRESSED
//! feature says, as perf writes it.

#![forbid(unsafe_code)]

use ruzstd::encoding::{compress_to_vec, CompressionLevel};

/// PERF_RECORD_COMPRESSED.
pub const PERF_RECORD_COMPRESSED: u32 = 81;
/// Largest record perf writes (the u16 size field).
const MAX_RECORD: usize = u16::MAX as usize;
/// Ring data compressed as one frame (at most): small enough that even a
/// raw (incompressible) frame fits one record, and that one record never
/// decompresses to more than perf's decompression buffer (the ring size).
const CHUNK: usize = 60 * 1024;

/// A compressing stage between the rings and the output.
#[derive(Clone, Debug, Default)]
pub struct Compressor {
    /// The `-z` level (1..=22).
    pub level: u32,
    /// Bytes of ring data given to [`Compressor::compress`].
    pub transferred: u64,
    /// Bytes of COMPRESSED records made from them (headers included).
    pub compressed: u64,
}

impl Compressor {
    pub fn new(level: u32) -> Self {
        Compressor {
            level,
            ..Default::default()
        }
    }

    /// Appends COMPRESSED records holding `data` (whole perf records) to
    /// `out`.
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let before = out.len();
        let mut start = 0usize;
        while start < data.len() {
            let end = chunk_end(data, start);
            let frame = compress_to_vec(&data[start..end], CompressionLevel::Fastest);
            // A frame larger than one record (a single huge perf record that
            // does not compress) continues in the next record: perf and prec
            // decode the bodies as one stream.
            for piece in frame.chunks(MAX_RECORD - 8) {
                let size = (piece.len() + 8) as u16;
                out.extend_from_slice(&PERF_RECORD_COMPRESSED.to_ne_bytes());
                out.extend_from_slice(&0u16.to_ne_bytes());
                out.extend_from_slice(&size.to_ne_bytes());
                out.extend_from_slice(piece);
            }
            start = end;
        }
        self.transferred += data.len() as u64;
        self.compressed += (out.len() - before) as u64;
    }

    /// transferred / compressed (perf's "ratio is").
    pub fn ratio(&self) -> f64 {
        if self.compressed == 0 {
            0.0
        } else {
            self.transferred as f64 / self.compressed as f64
        }
    }
}

/// The end of the chunk starting at `start`: as many whole records as fit in
/// [`CHUNK`] bytes (at least one).
fn chunk_end(data: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < data.len() {
        let size = data
            .get(end + 6..end + 8)
            .map_or(0, |b| usize::from(u16::from_ne_bytes([b[0], b[1]])));
        if size < 8 || end + size > data.len() {
            // Not a record stream: keep the rest together.
            return data.len().min(start + CHUNK).max(start + 1);
        }
        if end > start && end + size - start > CHUNK {
            break;
        }
        end += size;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn rec(len: usize, fill: u8) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&9u32.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&(len as u16).to_ne_bytes());
        v.resize(len, fill);
        v
    }

    #[test]
    fn records_roundtrip_and_fit() {
        let mut data = Vec::new();
        for i in 0..5000 {
            data.extend(rec(40 + (i % 3) * 8, (i % 251) as u8));
        }
        data.extend(rec(65528, 7));
        let mut c = Compressor::new(1);
        let mut out = Vec::new();
        c.compress(&data, &mut out);
        let mut stream = Vec::new();
        let mut p = 0;
        while p < out.len() {
            assert_eq!(u32::from_ne_bytes(out[p..p + 4].try_into().unwrap()), 81);
            let size = usize::from(u16::from_ne_bytes([out[p + 6], out[p + 7]]));
            stream.extend_from_slice(&out[p + 8..p + size]);
            p += size;
        }
        assert_eq!(c.transferred, data.len() as u64);
        assert_eq!(c.compressed, out.len() as u64);
        let mut back = Vec::new();
        let mut src: &[u8] = &stream;
        while !src.is_empty() {
            let mut d = ruzstd::decoding::StreamingDecoder::new(&mut src).unwrap();
            d.read_to_end(&mut back).unwrap();
        }
        assert_eq!(back, data);
        assert!(c.ratio() > 1.0);
    }
}
