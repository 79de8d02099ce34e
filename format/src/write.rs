//! Writing perf.data, in file mode or pipe mode.
//!
//! The output is what the oldest perf prec promises to work with (perf 6.1)
//! accepts: attrs are written with `size` 128 (VER7; perf 6.1 rejects 136),
//! `attr_size` 144, records are copied as given (callers keep them 8-byte
//! aligned), features follow the data section.
//!
//! [`FileWriter`] writes the header first and patches `data.size` on every
//! [`FileWriter::flush`], so a writer killed at any moment leaves a file that
//! reads up to its last flush. Features and the final header are written by
//! [`FileWriter::finish`]. [`PipeWriter`] writes the stream form: a 16-byte
//! header, then HEADER_ATTR and HEADER_FEATURE records, then data.

use std::io::{self, Seek, SeekFrom, Write};

use crate::attr::ATTR_SIZE_VER7;
use crate::constants::{FeatureId, RecordType};
use crate::endian::Endian;
use crate::read::{EventAttr, FILE_HEADER_SIZE, MAGIC, PIPE_HEADER_SIZE};

/// The attr size prec writes (perf 6.1's `sizeof(struct perf_event_attr)`).
pub const WRITE_ATTR_SIZE: u32 = ATTR_SIZE_VER7;

/// Appends the magic in `endian`.
fn put_magic(endian: Endian, out: &mut Vec<u8>) {
    endian.put_u64(out, MAGIC);
}

/// Writes a file-mode perf.data.
pub struct FileWriter<W: Write + Seek> {
    out: W,
    endian: Endian,
    attrs_section: (u64, u64),
    data_offset: u64,
    data_size: u64,
    buffer: Vec<u8>,
    /// Flush to the file when the buffer grows past this.
    buffer_limit: usize,
    /// The feature bitmap of [`FileWriter::write_features_early`], while
    /// its sections still follow the data.
    early_features: Option<[u64; 4]>,
}

impl<W: Write + Seek> FileWriter<W> {
    /// Starts a file: writes the header (data size 0, no features), the id
    /// arrays and the attrs. `out` should be empty and positioned at 0.
    pub fn new(out: W, endian: Endian, attrs: &[EventAttr]) -> io::Result<Self> {
        let mut head = vec![0u8; FILE_HEADER_SIZE as usize];
        // Id arrays first, then the attrs that point at them (as perf does).
        let mut id_sections = Vec::with_capacity(attrs.len());
        for a in attrs {
            let offset = head.len() as u64;
            for &id in &a.ids {
                endian.put_u64(&mut head, id);
            }
            id_sections.push((offset, a.ids.len() as u64 * 8));
        }
        let attrs_offset = head.len() as u64;
        for (a, (off, size)) in attrs.iter().zip(&id_sections) {
            a.attr.write(endian, WRITE_ATTR_SIZE, &mut head);
            endian.put_u64(&mut head, *off);
            endian.put_u64(&mut head, *size);
        }
        let attrs_size = head.len() as u64 - attrs_offset;
        let data_offset = head.len() as u64;
        let mut w = FileWriter {
            out,
            endian,
            attrs_section: (attrs_offset, attrs_size),
            data_offset,
            data_size: 0,
            buffer: Vec::with_capacity(1 << 20),
            buffer_limit: 1 << 20,
            early_features: None,
        };
        let header = w.header_bytes([0; 4]);
        head[..FILE_HEADER_SIZE as usize].copy_from_slice(&header);
        w.out.seek(SeekFrom::Start(0))?;
        w.out.write_all(&head)?;
        w.out.flush()?;
        Ok(w)
    }

    fn header_bytes(&self, features: [u64; 4]) -> Vec<u8> {
        let e = self.endian;
        let mut h = Vec::with_capacity(FILE_HEADER_SIZE as usize);
        put_magic(e, &mut h);
        e.put_u64(&mut h, FILE_HEADER_SIZE);
        e.put_u64(&mut h, u64::from(WRITE_ATTR_SIZE) + 16);
        e.put_u64(&mut h, self.attrs_section.0);
        e.put_u64(&mut h, self.attrs_section.1);
        e.put_u64(&mut h, self.data_offset);
        e.put_u64(&mut h, self.data_size);
        e.put_u64(&mut h, 0);
        e.put_u64(&mut h, 0);
        for w in features {
            e.put_u64(&mut h, w);
        }
        h
    }

    /// The byte order being written.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Appends one or more whole records (header included).
    pub fn write_records(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= self.buffer_limit {
            self.write_buffer()?;
        }
        Ok(())
    }

    /// Appends a record made of a header and a body.
    pub fn write_record(&mut self, kind: RecordType, misc: u16, body: &[u8]) -> io::Result<()> {
        let size = body.len() + 8;
        let size = u16::try_from(size).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "record larger than 64 KiB")
        })?;
        let e = self.endian;
        e.put_u32(&mut self.buffer, kind.0);
        e.put_u16(&mut self.buffer, misc);
        e.put_u16(&mut self.buffer, size);
        self.buffer.extend_from_slice(body);
        if self.buffer.len() >= self.buffer_limit {
            self.write_buffer()?;
        }
        Ok(())
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        if self.early_features.take().is_some() {
            // The data is about to cover the early features: the header
            // stops naming them first.
            let header = self.header_bytes([0; 4]);
            self.out.seek(SeekFrom::Start(0))?;
            self.out.write_all(&header)?;
        }
        self.out
            .seek(SeekFrom::Start(self.data_offset + self.data_size))?;
        self.out.write_all(&self.buffer)?;
        self.data_size += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Bytes of data written so far (flushed or buffered).
    pub fn data_size(&self) -> u64 {
        self.data_size + self.buffer.len() as u64
    }

    /// Writes buffered records and updates the header's data size, so the
    /// file is complete up to here even if the process dies next.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()?;
        self.out.flush()?;
        let header = self.header_bytes(self.early_features.unwrap_or([0; 4]));
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header)?;
        self.out.flush()
    }

    /// Writes `features` after the data so far and a header that names
    /// them, before [`FileWriter::finish`]: for a file whose data is
    /// complete early (a directory's header file), so that a recorder killed
    /// later leaves them. They stay until more data is written over them.
    pub fn write_features_early(&mut self, features: &[(FeatureId, Vec<u8>)]) -> io::Result<()> {
        self.write_buffer()?;
        let bitmap = self.write_feature_sections(features)?;
        self.early_features = Some(bitmap);
        self.flush()
    }

    /// Writes the feature sections (in increasing feature order, each
    /// given encoded) and the final header; returns the output.
    pub fn finish(mut self, features: &[(FeatureId, Vec<u8>)]) -> io::Result<W> {
        self.write_buffer()?;
        let bitmap = self.write_feature_sections(features)?;
        let header = self.header_bytes(bitmap);
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// The feature table and sections at the end of the data; returns the
    /// header's feature bitmap.
    fn write_feature_sections(
        &mut self,
        features: &[(FeatureId, Vec<u8>)],
    ) -> io::Result<[u64; 4]> {
        let mut features: Vec<&(FeatureId, Vec<u8>)> =
            features.iter().filter(|f| f.0 .0 < 256).collect();
        features.sort_by_key(|f| f.0);
        features.dedup_by_key(|f| f.0);
        let table_offset = self.data_offset + self.data_size;
        let mut payload_offset = table_offset + 16 * features.len() as u64;
        let mut table = Vec::with_capacity(16 * features.len());
        let mut bitmap = [0u64; 4];
        for (id, bytes) in &features {
            self.endian.put_u64(&mut table, payload_offset);
            self.endian.put_u64(&mut table, bytes.len() as u64);
            payload_offset += bytes.len() as u64;
            bitmap[(id.0 / 64) as usize] |= 1 << (id.0 % 64);
        }
        self.out.seek(SeekFrom::Start(table_offset))?;
        self.out.write_all(&table)?;
        for (_, bytes) in &features {
            self.out.write_all(bytes)?;
        }
        Ok(bitmap)
    }
}

/// Writes a pipe-mode perf.data stream.
pub struct PipeWriter<W: Write> {
    out: W,
    endian: Endian,
    written: u64,
}

impl<W: Write> PipeWriter<W> {
    /// Starts a stream: the 16-byte header and one HEADER_ATTR per attr.
    pub fn new(mut out: W, endian: Endian, attrs: &[EventAttr]) -> io::Result<Self> {
        let mut head = Vec::new();
        put_magic(endian, &mut head);
        endian.put_u64(&mut head, PIPE_HEADER_SIZE);
        for a in attrs {
            let mut body = Vec::new();
            a.attr.write(endian, WRITE_ATTR_SIZE, &mut body);
            for &id in &a.ids {
                endian.put_u64(&mut body, id);
            }
            push_record(&mut head, endian, RecordType::HEADER_ATTR, 0, &body)?;
        }
        out.write_all(&head)?;
        Ok(PipeWriter {
            out,
            endian,
            written: head.len() as u64,
        })
    }

    /// Writes the features as HEADER_FEATURE records, then perf 6.1's end
    /// marker (an empty feature numbered HEADER_LAST_FEATURE).
    pub fn write_features(&mut self, features: &[(FeatureId, Vec<u8>)]) -> io::Result<()> {
        let mut buf = Vec::new();
        for (id, bytes) in features {
            let mut body = Vec::with_capacity(8 + bytes.len());
            self.endian.put_u64(&mut body, u64::from(id.0));
            body.extend_from_slice(bytes);
            // Keep records 8-byte aligned (newer perf insists), except
            // CPU_TOPOLOGY: perf 6.1 tells its old layout (no core/socket
            // ids) from the new one by the section size, so padding makes it
            // read ids that are not there and reject the whole stream.
            if *id != FeatureId::CPU_TOPOLOGY {
                body.resize(body.len().next_multiple_of(8), 0);
            }
            push_record(&mut buf, self.endian, RecordType::HEADER_FEATURE, 0, &body)?;
        }
        let mut end = Vec::new();
        self.endian
            .put_u64(&mut end, u64::from(FeatureId::LAST_FEATURE_6_1.0));
        push_record(&mut buf, self.endian, RecordType::HEADER_FEATURE, 0, &end)?;
        self.write_records(&buf)
    }

    /// Appends whole records.
    pub fn write_records(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends a record made of a header and a body.
    pub fn write_record(&mut self, kind: RecordType, misc: u16, body: &[u8]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(body.len() + 8);
        push_record(&mut buf, self.endian, kind, misc, body)?;
        self.write_records(&buf)
    }

    /// Writes a HEADER_TRACING_DATA record and the TRACING_DATA bytes that
    /// follow it, as perf does in pipe mode: the record (12 bytes) holds
    /// their size rounded up to 8, which counts the padding after them.
    pub fn write_tracing_data(&mut self, tracing_data: &[u8]) -> io::Result<()> {
        let aligned = tracing_data.len().next_multiple_of(8);
        let size = u32::try_from(aligned)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "tracing data over 4 GiB"))?;
        let mut body = Vec::with_capacity(4);
        self.endian.put_u32(&mut body, size);
        self.write_record(RecordType::HEADER_TRACING_DATA, 0, &body)?;
        self.write_records(tracing_data)?;
        self.write_records(&vec![0; aligned - tracing_data.len()])
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends a record (header and body) to `out`.
pub fn push_record(
    out: &mut Vec<u8>,
    endian: Endian,
    kind: RecordType,
    misc: u16,
    body: &[u8],
) -> io::Result<()> {
    let size = u16::try_from(body.len() + 8)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "record larger than 64 KiB"))?;
    endian.put_u32(out, kind.0);
    endian.put_u16(out, misc);
    endian.put_u16(out, size);
    out.extend_from_slice(body);
    Ok(())
}
