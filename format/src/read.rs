//! Reading a whole perf.data, in file mode or pipe mode, from bytes.
//!
//! [`PerfFile::parse`] reads the header, the attrs with their ids and the
//! feature section table; records are then read on demand, borrowing from the
//! input: [`PerfFile::records`] in file order, [`PerfFile::ordered_records`]
//! in time order the way perf delivers them.
//!
//! File mode layout (perf's `tools/perf/util/header.c`):
//! `[104-byte header][attrs with id sections][data][feature table][features]`.
//! Pipe mode is a 16-byte header followed by records only; attrs and features
//! travel as HEADER_ATTR and HEADER_FEATURE records.
//!
//! Problems that still leave something readable (a data section that runs
//! past the end of a truncated file, a feature section out of bounds) become
//! [`PerfFile::warnings`]; the rest are errors with the offset.

use std::collections::VecDeque;
use std::sync::OnceLock;

use crate::attr::Attr;
use crate::bytes::Cursor;
use crate::constants::{FeatureId, RecordType};
use crate::endian::Endian;
use crate::error::{Error, ErrorKind, Result};
use crate::record::{RawRecord, Record, RecordHeader};

/// `PERFILE2` read as a little-endian u64.
pub const MAGIC: u64 = 0x3245_4c49_4652_4550;
/// Size of the file-mode header perf writes.
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of the pipe-mode header.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// perf's limit on one COMPRESSED record's output when the file does not say
/// (its default mmap size); guards against decompression bombs.
const DEFAULT_DECOMPRESSED_LIMIT: u64 = 16 << 20;

/// The records held by one COMPRESSED record (by its offset), or why
/// they could not be had: (file, offset of the COMPRESSED record, its
/// decoded stream and the range of it).
type DecompressedChunk = (u32, u64, Result<(usize, std::ops::Range<usize>)>);

/// The COMPRESSED records' contents: each data file's decoded stream, and
/// each record's part of it.
#[derive(Debug, Default)]
struct Decompressed {
    streams: Vec<Box<[u8]>>,
    chunks: Vec<DecompressedChunk>,
}

/// File or pipe mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    File,
    Pipe,
}

/// An offset and size pair from the header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub size: u64,
}

/// The file-mode header (`struct perf_file_header`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileHeader {
    pub size: u64,
    pub attr_size: u64,
    pub attrs: Section,
    pub data: Section,
    pub event_types: Section,
    /// The 256-bit feature bitmap.
    pub features: [u64; 4],
}

impl FileHeader {
    /// Whether feature `id` has its bit set.
    pub fn has_feature(&self, id: FeatureId) -> bool {
        let bit = id.0 as usize;
        bit < 256 && self.features[bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// An event's attr with the ids of its opened counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAttr {
    pub attr: Attr,
    pub ids: Vec<u64>,
}

/// A feature section, still encoded (decode with [`crate::features`]).
#[derive(Clone, Copy, Debug)]
pub struct RawFeature<'a> {
    pub id: FeatureId,
    /// Offset of the payload in the input.
    pub offset: u64,
    pub data: &'a [u8],
}

/// A parsed perf.data: metadata, and records on demand.
#[derive(Debug)]
pub struct PerfFile<'a> {
    input: &'a [u8],
    endian: Endian,
    mode: Mode,
    header: Option<FileHeader>,
    attrs: Vec<EventAttr>,
    features: Vec<RawFeature<'a>>,
    data_start: usize,
    data_end: usize,
    /// (id, attr index), sorted by id.
    id_index: Vec<(u64, usize)>,
    decompressed_limit: u64,
    /// COMPRESSED records' contents by record offset, made on first use.
    decompressed: OnceLock<Decompressed>,
    warnings: Vec<String>,
    /// A directory-format perf.data's `data.N` files: (name, bytes).
    data_files: Vec<(&'a str, &'a [u8])>,
}

impl<'a> PerfFile<'a> {
    /// Parses the header, attrs and feature table of a perf.data held in
    /// memory (a mapped file, or a pipe-mode stream read to the end).
    pub fn parse(input: &'a [u8]) -> Result<PerfFile<'a>> {
        let mut c = Cursor::new(input, 0, Endian::Little);
        let magic = c.u64("perf.data magic")?;
        let endian = if magic == MAGIC {
            Endian::Little
        } else if magic == MAGIC.swap_bytes() {
            Endian::Big
        } else {
            return Err(Error::new(0, ErrorKind::BadMagic(magic)));
        };
        let size = endian.u64(c.bytes(8, "perf.data header size")?);
        if size == PIPE_HEADER_SIZE {
            Self::parse_pipe(input, endian)
        } else {
            Self::parse_file(input, endian)
        }
    }

    fn parse_file(input: &'a [u8], endian: Endian) -> Result<PerfFile<'a>> {
        let mut c = Cursor::new(input, 0, endian);
        c.u64("magic")?;
        let size = c.u64("header size")?;
        if size != FILE_HEADER_SIZE && size != 72 {
            return Err(Error::new(
                8,
                ErrorKind::BadHeader(format!(
                    "header size is {size}, expected 104 (or 72, or 16 for pipe mode)"
                )),
            ));
        }
        let attr_size = c.u64("attr_size")?;
        let section = |c: &mut Cursor<'_>| -> Result<Section> {
            Ok(Section {
                offset: c.u64("section offset")?,
                size: c.u64("section size")?,
            })
        };
        let attrs = section(&mut c)?;
        let data = section(&mut c)?;
        let event_types = section(&mut c)?;
        let mut features = [0u64; 4];
        if size == FILE_HEADER_SIZE {
            for w in &mut features {
                *w = c.u64("feature bitmap")?;
            }
        }
        let header = FileHeader {
            size,
            attr_size,
            attrs,
            data,
            event_types,
            features,
        };
        let mut warnings = Vec::new();
        let file_len = input.len() as u64;

        // Attrs. perf walks entries by each attr's own size, then its ids section.
        if attr_size == 0 && attrs.size != 0 {
            return Err(Error::new(
                16,
                ErrorKind::BadHeader("attr_size is 0".into()),
            ));
        }
        let attrs_end = attrs
            .offset
            .checked_add(attrs.size)
            .filter(|&e| e <= file_len);
        let Some(attrs_end) = attrs_end else {
            return Err(Error::new(
                24,
                ErrorKind::BadHeader(format!(
                    "attr section {:#x}+{:#x} runs past the end of the file ({file_len:#x} bytes)",
                    attrs.offset, attrs.size
                )),
            ));
        };
        if attr_size > attrs.size && attrs.size != 0 {
            return Err(Error::new(
                16,
                ErrorKind::BadHeader(format!(
                    "attr_size {attr_size:#x} is larger than the whole attr section ({:#x} bytes); \
                     expected the size of one perf_event_attr and its ids section",
                    attrs.size
                )),
            ));
        }
        let nr_attrs = attrs.size.checked_div(attr_size).unwrap_or(0);
        let mut event_attrs = Vec::new();
        let mut ac = Cursor::new(
            &input[attrs.offset as usize..attrs_end as usize],
            attrs.offset,
            endian,
        );
        for _ in 0..nr_attrs {
            let entry_start = ac.offset();
            let attr = Attr::parse(&mut ac)?;
            let ids_offset = ac.u64("attr ids offset")?;
            let ids_size = ac.u64("attr ids size")?;
            let ids_end = ids_offset
                .checked_add(ids_size)
                .filter(|&e| e <= file_len && ids_size % 8 == 0);
            let Some(ids_end) = ids_end else {
                return Err(Error::new(
                    entry_start,
                    ErrorKind::BadHeader(format!(
                        "ids of attr at {entry_start:#x} ({ids_offset:#x}+{ids_size:#x}) run past the end of the file or are not a multiple of 8"
                    )),
                ));
            };
            let ids = input[ids_offset as usize..ids_end as usize]
                .chunks_exact(8)
                .map(|b| endian.u64(b))
                .collect();
            event_attrs.push(EventAttr { attr, ids });
        }

        // Data.
        let data_start = data.offset.min(file_len);
        if data.offset > file_len {
            return Err(Error::new(
                40,
                ErrorKind::BadHeader(format!(
                    "data section starts at {:#x}, past the end of the file ({file_len:#x} bytes)",
                    data.offset
                )),
            ));
        }
        let mut data_end = data.offset.saturating_add(data.size);
        if data.size == 0 {
            warnings.push(
                "the data size field is 0, which is unexpected (was recording interrupted?); reading to the end of the file".into(),
            );
            data_end = file_len;
        } else if data_end > file_len {
            warnings.push(format!(
                "data section ends at {data_end:#x} but the file has only {file_len:#x} bytes (truncated?); reading what is there"
            ));
            data_end = file_len;
        }

        // Feature table at the end of the data section.
        let mut feature_list = Vec::new();
        let table_start = data.offset.saturating_add(data.size);
        let mut tc = if table_start <= file_len && data.size != 0 {
            Some(Cursor::new(
                &input[table_start as usize..],
                table_start,
                endian,
            ))
        } else {
            None
        };
        for bit in 0..256u32 {
            if features[(bit / 64) as usize] & (1 << (bit % 64)) == 0 {
                continue;
            }
            let Some(tc) = tc.as_mut() else {
                warnings.push("feature sections are missing (file truncated?)".into());
                break;
            };
            let entry = (tc.u64("feature offset"), tc.u64("feature size"));
            let (Ok(offset), Ok(size)) = entry else {
                warnings.push(format!(
                    "feature table at {table_start:#x} is cut short (file truncated?)"
                ));
                break;
            };
            let id = FeatureId(bit);
            match offset.checked_add(size).filter(|&e| e <= file_len) {
                Some(end) => feature_list.push(RawFeature {
                    id,
                    offset,
                    data: &input[offset as usize..end as usize],
                }),
                None => warnings.push(format!(
                    "feature {id} section {offset:#x}+{size:#x} runs past the end of the file; ignored"
                )),
            }
        }
        let mut file = PerfFile {
            input,
            endian,
            mode: Mode::File,
            header: Some(header),
            attrs: event_attrs,
            features: feature_list,
            data_start: data_start as usize,
            data_end: data_end as usize,
            id_index: Vec::new(),
            decompressed_limit: DEFAULT_DECOMPRESSED_LIMIT,
            decompressed: OnceLock::new(),
            warnings,
            data_files: Vec::new(),
        };
        file.finish_setup();
        Ok(file)
    }

    fn parse_pipe(input: &'a [u8], endian: Endian) -> Result<PerfFile<'a>> {
        let mut file = PerfFile {
            input,
            endian,
            mode: Mode::Pipe,
            header: None,
            attrs: Vec::new(),
            features: Vec::new(),
            data_start: PIPE_HEADER_SIZE as usize,
            data_end: input.len(),
            id_index: Vec::new(),
            decompressed_limit: DEFAULT_DECOMPRESSED_LIMIT,
            decompressed: OnceLock::new(),
            warnings: Vec::new(),
            data_files: Vec::new(),
        };
        // Attrs and features come as records; collect them up front so that
        // samples can be decoded in one pass later.
        let mut attrs = Vec::new();
        let mut features = Vec::new();
        let mut records = file.raw_records();
        for r in &mut records {
            let r = match r {
                Ok(r) => r,
                Err(_) => break,
            };
            match r.header.kind {
                RecordType::HEADER_ATTR => {
                    if let Ok(Record::HeaderAttr { attr, ids }) = r.parse(None) {
                        attrs.push(EventAttr {
                            attr,
                            ids: ids.iter().collect(),
                        });
                    }
                }
                RecordType::HEADER_FEATURE if r.body.len() >= 8 => {
                    let id = endian.u64(r.body);
                    let id = FeatureId(u32::try_from(id).unwrap_or(u32::MAX));
                    features.push(RawFeature {
                        id,
                        offset: r.offset + 16,
                        data: &r.body[8..],
                    });
                }
                // The tracing data follows its record (the file-mode
                // feature's bytes, with padding).
                RecordType::HEADER_TRACING_DATA => features.push(RawFeature {
                    id: FeatureId::TRACING_DATA,
                    offset: r.offset + u64::from(r.header.size),
                    data: r.trailing,
                }),
                _ => {}
            }
        }
        file.attrs = attrs;
        file.features = features;
        file.finish_setup();
        Ok(file)
    }

    fn finish_setup(&mut self) {
        let mut index: Vec<(u64, usize)> = self
            .attrs
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.ids.iter().map(move |&id| (id, i)))
            .collect();
        index.sort_unstable();
        index.dedup_by_key(|e| e.0);
        self.id_index = index;
        if let Some(f) = self.feature(FeatureId::COMPRESSED) {
            // u32 version, type, level, ratio, mmap_len
            if f.data.len() >= 20 {
                let mmap_len = u64::from(self.endian.u32(&f.data[16..]));
                if mmap_len > 0 {
                    self.decompressed_limit = mmap_len.max(1 << 16);
                }
            }
        }
    }

    /// The byte order of the file.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// File or pipe mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The file-mode header (`None` in pipe mode).
    pub fn header(&self) -> Option<&FileHeader> {
        self.header.as_ref()
    }

    /// The events' attrs with their ids, in file order.
    pub fn attrs(&self) -> &[EventAttr] {
        &self.attrs
    }

    /// The feature sections present, in increasing feature order (file mode)
    /// or stream order (pipe mode).
    pub fn features(&self) -> &[RawFeature<'a>] {
        &self.features
    }

    /// One feature section, if present.
    pub fn feature(&self, id: FeatureId) -> Option<&RawFeature<'a>> {
        self.features.iter().find(|f| f.id == id)
    }

    /// Problems that did not stop parsing.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The data section's byte range in the input.
    pub fn data_range(&self) -> (u64, u64) {
        (self.data_start as u64, self.data_end as u64)
    }

    /// The whole input.
    pub fn input(&self) -> &'a [u8] {
        self.input
    }

    /// Adds a directory-format perf.data's data files (`data.0`, `data.1`,
    /// ...: each thread's records of `perf record --threads`), whose records
    /// follow the header file's data section. Each is `(name, bytes)`; the
    /// name is for messages. Only a header with the DIR_FORMAT feature has
    /// them, and perf reads them in the order given.
    pub fn add_data_files(&mut self, files: Vec<(&'a str, &'a [u8])>) {
        self.data_files = files;
    }

    /// The name given to data file `file` ([`RawRecord::file`]) by
    /// [`PerfFile::add_data_files`]; `None` for file 0, the input itself.
    pub fn data_file_name(&self, file: u32) -> Option<&'a str> {
        let index = usize::try_from(file).ok()?.checked_sub(1)?;
        self.data_files.get(index).map(|f| f.0)
    }

    /// Records in perf's reading order, without expanding COMPRESSED
    /// records: the data section, then (directory format) the data files,
    /// taking turns of 10 MiB each.
    pub fn raw_records(&self) -> DataRecords<'a> {
        let mut readers = vec![RawRecords {
            pos: self.data_start,
            ..RawRecords::new(&self.input[..self.data_end], self.endian)
        }];
        for (i, &(name, bytes)) in self.data_files.iter().enumerate() {
            if !bytes.is_empty() {
                readers.push(RawRecords {
                    file: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    file_name: Some(name),
                    ..RawRecords::new(bytes, self.endian)
                });
            }
        }
        DataRecords {
            readers,
            current: 0,
            read_in_turn: 0,
        }
    }

    /// Records in file order; COMPRESSED records are replaced by the records
    /// they contain. After an error the iterator ends.
    pub fn records(&self) -> Records<'_> {
        Records {
            file: self,
            outer: self.raw_records(),
            inner: None,
        }
    }

    /// Records in the order perf delivers them: buffered per FINISHED_ROUND
    /// and sorted by time (perf's `ordered_events`: at each round, deliver
    /// what is not newer than the newest time seen before the previous
    /// round). Records without a time (perf's own, or kernel records without
    /// sample_id_all) are delivered at once, as perf does.
    pub fn ordered_records(&self) -> OrderedRecords<'_> {
        OrderedRecords {
            file: self,
            inner: self.records(),
            queue: Vec::new(),
            ready: VecDeque::new(),
            next_flush: 0,
            max_time: 0,
            queue_max_time: 0,
            last_flushed: 0,
            seq: 0,
            out_of_order: 0,
            done: false,
            pending_error: None,
        }
    }

    /// Index into [`PerfFile::attrs`] of the attr a record belongs to, as
    /// perf finds it: a single attr owns everything; otherwise the record's
    /// event id (sample id position, or trailer position for other kernel
    /// records) is looked up in the attrs' id lists, id 0 meaning the first.
    /// `None` for an id found in no list, and for perf's own records.
    pub fn attr_index(&self, r: &RawRecord<'_>) -> Option<usize> {
        if self.attrs.len() <= 1 {
            return if self.attrs.is_empty() { None } else { Some(0) };
        }
        if !r.header.kind.is_kernel() {
            return None;
        }
        let first = &self.attrs[0].attr;
        let id = if r.header.kind == RecordType::SAMPLE {
            let pos = first.sample_id_pos()?;
            r.body
                .get(pos * 8..pos * 8 + 8)
                .map(|b| self.endian.u64(b))?
        } else {
            if !first.sample_id_all() {
                return Some(0);
            }
            let pos = first.trailer_id_pos()?;
            let len = r.body.len();
            let start = len.checked_sub(pos * 8)?;
            self.endian.u64(r.body.get(start..start + 8)?)
        };
        if id == 0 {
            return Some(0);
        }
        self.attr_of_id(id)
    }

    /// The attr index owning event id `id`.
    pub fn attr_of_id(&self, id: u64) -> Option<usize> {
        self.id_index
            .binary_search_by_key(&id, |e| e.0)
            .ok()
            .map(|i| self.id_index[i].1)
    }

    /// The attr of a record (see [`PerfFile::attr_index`]).
    pub fn attr_for(&self, r: &RawRecord<'_>) -> Option<&Attr> {
        self.attr_index(r).map(|i| &self.attrs[i].attr)
    }

    /// Decodes a record with its own attr.
    #[inline]
    pub fn parse_record<'r>(&self, r: &RawRecord<'r>) -> Result<Record<'r>> {
        r.parse(self.attr_for(r))
    }

    /// The timestamp perf orders a record by, if it has one.
    pub fn record_time(&self, r: &RawRecord<'_>) -> Option<u64> {
        if !r.header.kind.is_kernel() {
            return None;
        }
        let attr = self.attr_for(r)?;
        r.sample_id(attr).time
    }

    /// The records held by the COMPRESSED record at `offset`, decompressed
    /// once and kept for the life of the file.
    ///
    /// perf 6.1 compresses a whole session as one zstd stream (one frame,
    /// flushed after each ring-buffer chunk and never ended), cut into
    /// COMPRESSED records, so a record's body is not a frame of its own:
    /// the bodies are decoded together. As perf's streaming decoder, a
    /// COMPRESSED record yields the records that the blocks it completes
    /// complete; one that a later block ends comes with the later one.
    fn decompressed(&self, file: u32, offset: u64) -> Result<&[u8]> {
        let all = self.decompressed.get_or_init(|| {
            let mut compressed: Vec<RawRecord<'_>> = self
                .raw_records()
                .map_while(|r| r.ok())
                .filter(|r| r.header.kind == RecordType::COMPRESSED)
                .collect();
            // Each data file of a directory is its own stream.
            compressed.sort_by_key(|r| (r.file, r.offset));
            let mut all = Decompressed::default();
            for stream in compressed.chunk_by(|a, b| a.file == b.file) {
                let decoded = self.decompress(stream).map_err(|mut e| {
                    e.file = self.data_file_name(stream[0].file).map(Into::into);
                    e
                });
                match decoded {
                    Ok((data, ranges)) => {
                        let index = all.streams.len();
                        all.streams.push(data.into_boxed_slice());
                        all.chunks.extend(
                            stream
                                .iter()
                                .zip(ranges)
                                .map(|(r, range)| (r.file, r.offset, Ok((index, range)))),
                        );
                    }
                    Err(e) => all
                        .chunks
                        .extend(stream.iter().map(|r| (r.file, r.offset, Err(e.clone())))),
                }
            }
            all
        });
        match all
            .chunks
            .binary_search_by_key(&(file, offset), |c| (c.0, c.1))
        {
            Ok(i) => match &all.chunks[i].2 {
                Ok((stream, range)) => Ok(all.streams[*stream].get(range.clone()).unwrap_or(&[])),
                Err(e) => Err(e.clone()),
            },
            Err(_) => Err(Error::new(
                offset,
                ErrorKind::BadRecord {
                    record_type: RecordType::COMPRESSED.0,
                    problem: "compressed record not found".into(),
                },
            )),
        }
    }

    /// Decodes the bodies of one stream's COMPRESSED `records`: the data,
    /// and each record's range of whole records in it.
    fn decompress(
        &self,
        records: &[RawRecord<'_>],
    ) -> Result<(Vec<u8>, Vec<std::ops::Range<usize>>)> {
        use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
        let bad = |problem: String| {
            Error::new(
                records[0].offset,
                ErrorKind::BadRecord {
                    record_type: RecordType::COMPRESSED.0,
                    problem,
                },
            )
        };
        let zstd = |e: ruzstd::decoding::errors::FrameDecoderError| bad(format!("zstd: {e}"));
        let mut stream = Vec::with_capacity(records.iter().map(|r| r.body.len()).sum());
        let mut body_ends = Vec::with_capacity(records.len());
        for r in records {
            stream.extend_from_slice(r.body);
            body_ends.push(stream.len());
        }
        end_open_zstd_frame(&mut stream);
        // Each record may hold at most perf's mmap size (a bomb guard).
        let limit = self.decompressed_limit.saturating_mul(records.len() as u64);
        let mut out: Vec<u8> = Vec::new();
        // (input consumed, output made) after each block whose output is
        // known.
        let mut made: Vec<(usize, usize)> = Vec::new();
        // Raw blocks, which perf's decoder (libzstd) passes on as their
        // bytes come: (content start, end, output made at the end).
        let mut raw_blocks: Vec<(usize, usize, usize)> = Vec::new();
        let mut pos = 0;
        while pos < stream.len() {
            // A frame that declares its window (not single-segment) is told
            // the least one, 1 KiB: nothing is drained until it ends, so its
            // decoder keeps all it made, and says how much beyond that.
            const LEAST_WINDOW: usize = 1024;
            let magic = stream
                .get(pos..pos + 4)
                .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
            let windowed = magic == Some(0xfd2f_b528)
                && stream.get(pos + 4).is_some_and(|fhd| fhd & 0x20 == 0)
                && stream.len() > pos + 5;
            if windowed {
                stream[pos + 5] = 0;
            }
            let mut src = &stream[pos..];
            let before = src.len();
            let mut decoder = FrameDecoder::new();
            match decoder.init(&mut src) {
                Ok(()) => {}
                Err(ruzstd::decoding::errors::FrameDecoderError::ReadFrameHeaderError(
                    ruzstd::decoding::errors::ReadFrameHeaderError::SkipFrame { length, .. },
                )) => {
                    pos = pos.saturating_add(8).saturating_add(length as usize);
                    continue;
                }
                Err(e) => return Err(zstd(e)),
            }
            while !decoder.is_finished() {
                let blocks = decoder.blocks_decoded();
                let block = pos + before - src.len();
                let raw = stream
                    .get(block..block + 3)
                    .is_some_and(|h| (h[0] >> 1) & 3 == 0);
                decoder
                    .decode_blocks(&mut src, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(zstd)?;
                let ready = decoder.can_collect();
                if (out.len() + ready) as u64 > limit {
                    return Err(bad(format!(
                        "decompresses to more than {limit} bytes, the most {} compressed records hold",
                        records.len()
                    )));
                }
                let consumed = pos + before - src.len();
                // Under the window the decoder does not tell: the frame so
                // far, ended, decoded again (at most the window's 1 KiB).
                let output = match ready {
                    0 if windowed => {
                        let mut prefix = stream[pos..consumed].to_vec();
                        prefix.extend_from_slice(&[1, 0, 0]);
                        let mut again = FrameDecoder::new();
                        let mut prefix_src = &prefix[..];
                        again.init(&mut prefix_src).map_err(zstd)?;
                        again
                            .decode_blocks(&mut prefix_src, BlockDecodingStrategy::All)
                            .map_err(zstd)?;
                        Some(out.len() + again.can_collect())
                    }
                    0 => None,
                    _ => Some(out.len() + ready + LEAST_WINDOW),
                };
                // Once ended, it keeps no window: all is counted below.
                if let Some(output) = output.filter(|_| windowed && !decoder.is_finished()) {
                    made.push((consumed, output));
                    if raw {
                        raw_blocks.push((block + 3, consumed, output));
                    }
                }
                if decoder.blocks_decoded() == blocks && !decoder.is_finished() {
                    return Err(bad("zstd: no progress".into()));
                }
            }
            out.extend(decoder.collect().unwrap_or_default());
            pos += before - src.len();
            made.push((pos, out.len()));
        }
        // Each record's share: the whole records within what the blocks
        // its body completes made.
        let mut ranges = Vec::with_capacity(records.len());
        let (mut start, mut next) = (0, 0);
        let mut known = made.iter().peekable();
        let mut raw = raw_blocks.iter().peekable();
        let mut total = 0;
        for &end in &body_ends {
            while let Some(&&(consumed, output)) = known.peek() {
                if consumed > end {
                    break;
                }
                total = output;
                known.next();
            }
            while raw.peek().is_some_and(|r| r.1 <= end) {
                raw.next();
            }
            if let Some(&&(_, stop, output)) = raw.peek().filter(|r| r.0 <= end) {
                total = total.max(output - (stop - end));
            }
            while let Some(size) = out
                .get(next + 6..next + 8)
                .map(|s| usize::from(self.endian.u16(s)))
                .filter(|&size| size > 0 && next + size <= total)
            {
                next += size;
            }
            ranges.push(start..next);
            start = next;
        }
        // What no record completed (a cut last record) goes with the last.
        if let Some(last) = ranges.last_mut() {
            last.end = out.len();
        }
        Ok((out, ranges))
    }
}

/// Appends an empty last block if the zstd data in `stream` ends at a block
/// boundary of a frame that was never ended (as perf leaves its stream), so
/// that a decoder delivers all of it. Leaves other data alone.
fn end_open_zstd_frame(stream: &mut Vec<u8>) {
    let b = &stream[..];
    let mut pos = 0usize;
    loop {
        let Some(magic) = b.get(pos..pos + 4) else {
            return;
        };
        let magic = u32::from_le_bytes([magic[0], magic[1], magic[2], magic[3]]);
        if magic & 0xffff_fff0 == 0x184d_2a50 {
            // Skippable frame.
            let Some(len) = b.get(pos + 4..pos + 8) else {
                return;
            };
            let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
            pos = pos.saturating_add(8).saturating_add(len);
            continue;
        }
        if magic != 0xfd2f_b528 {
            return;
        }
        let Some(&fhd) = b.get(pos + 4) else {
            return;
        };
        let single = (fhd >> 5) & 1 == 1;
        let checksum = (fhd >> 2) & 1 == 1;
        let did = [0, 1, 2, 4][usize::from(fhd & 3)];
        let fcs = [usize::from(single), 2, 4, 8][usize::from(fhd >> 6)];
        pos += 5 + usize::from(!single) + did + fcs;
        loop {
            if pos == b.len() {
                // Open frame ending at a block boundary: end it.
                stream.extend_from_slice(&[1, 0, 0]);
                return;
            }
            let Some(h) = b.get(pos..pos + 3) else {
                return;
            };
            let h = u32::from(h[0]) | u32::from(h[1]) << 8 | u32::from(h[2]) << 16;
            let content = match (h >> 1) & 3 {
                1 => 1,
                3 => return,
                _ => (h >> 3) as usize,
            };
            pos += 3 + content;
            if h & 1 == 1 {
                break;
            }
        }
        if checksum {
            pos += 4;
        }
        if pos >= b.len() {
            return;
        }
    }
}

/// Iterator over the records of a data section (or of one decompressed
/// chunk), in order. Ends after the first error.
#[derive(Clone, Debug)]
pub struct RawRecords<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
    failed: bool,
    file: u32,
    file_name: Option<&'a str>,
}

impl<'a> RawRecords<'a> {
    /// Iterates the records in `data`, whose first byte is at absolute
    /// offset 0 (use for decompressed chunks and ring-buffer copies).
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        RawRecords {
            data,
            pos: 0,
            endian,
            failed: false,
            file: 0,
            file_name: None,
        }
    }
}

impl<'a> Iterator for RawRecords<'a> {
    type Item = Result<RawRecord<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let avail = self.data.len() - self.pos;
        let offset = self.pos as u64;
        let fail = |this: &mut Self, kind| {
            this.failed = true;
            let mut e = Error::new(offset, kind);
            e.file = this.file_name.map(Into::into);
            Some(Err(e))
        };
        if avail < 8 {
            return fail(
                self,
                ErrorKind::UnexpectedEof {
                    what: "record header",
                    needed: 8,
                    available: avail as u64,
                },
            );
        }
        let h = &self.data[self.pos..];
        let e = self.endian;
        let kind = RecordType(e.u32(h));
        let misc = e.u16(&h[4..]);
        let size = e.u16(&h[6..]);
        if size < 8 || usize::from(size) > avail {
            return fail(
                self,
                ErrorKind::BadRecordSize {
                    record_type: kind.0,
                    size: u64::from(size),
                    available: avail as u64,
                },
            );
        }
        let size = usize::from(size);
        let body = &h[8..size];
        // Two of perf's records are followed by payload not counted in size.
        let trailing_len = match kind {
            RecordType::HEADER_TRACING_DATA if body.len() >= 4 => u64::from(e.u32(body)),
            RecordType::AUXTRACE if body.len() >= 8 => e.u64(body),
            _ => 0,
        };
        if trailing_len > (avail - size) as u64 {
            return fail(
                self,
                ErrorKind::UnexpectedEof {
                    what: "payload after record",
                    needed: trailing_len,
                    available: (avail - size) as u64,
                },
            );
        }
        let trailing = &h[size..size + trailing_len as usize];
        self.pos += size + trailing_len as usize;
        Some(Ok(RawRecord {
            offset,
            file: self.file,
            header: RecordHeader {
                kind,
                misc,
                size: size as u16,
            },
            body,
            trailing,
            endian: e,
        }))
    }
}

/// perf's turn on each reader of a directory-format perf.data
/// (`READER_MAX_SIZE`).
const READER_TURN: u64 = 10 << 20;

/// Records of the data section and of any data files, in perf's reading
/// order ([`PerfFile::raw_records`]). Ends after the first error.
#[derive(Clone, Debug)]
pub struct DataRecords<'a> {
    readers: Vec<RawRecords<'a>>,
    current: usize,
    read_in_turn: u64,
}

impl<'a> Iterator for DataRecords<'a> {
    type Item = Result<RawRecord<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        // perf's __perf_session__process_dir_events: round robin, each
        // reader until it has read its turn or ends.
        let mut exhausted = 0;
        while exhausted < self.readers.len() {
            let reader = &mut self.readers[self.current];
            match reader.next() {
                Some(Ok(r)) => {
                    self.read_in_turn += u64::from(r.header.size) + r.trailing.len() as u64;
                    if self.read_in_turn >= READER_TURN {
                        self.read_in_turn = 0;
                        self.current = (self.current + 1) % self.readers.len();
                    }
                    return Some(Ok(r));
                }
                Some(Err(e)) => {
                    // perf stops reading at the first bad record.
                    for r in &mut self.readers {
                        r.failed = true;
                    }
                    return Some(Err(e));
                }
                None => {
                    exhausted += 1;
                    self.read_in_turn = 0;
                    self.current = (self.current + 1) % self.readers.len();
                }
            }
        }
        None
    }
}

/// Records in file order with COMPRESSED records expanded
/// ([`PerfFile::records`]). Records from a compressed chunk report the
/// offset of the COMPRESSED record that held them.
pub struct Records<'f> {
    file: &'f PerfFile<'f>,
    outer: DataRecords<'f>,
    inner: Option<(RawRecords<'f>, u32, u64)>,
}

impl<'f> Iterator for Records<'f> {
    type Item = Result<RawRecord<'f>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((inner, file, base)) = &mut self.inner {
                let (file, base) = (*file, *base);
                match inner.next() {
                    Some(item) => {
                        return Some(
                            item.map(|mut r| {
                                r.offset = base;
                                r.file = file;
                                r
                            })
                            .map_err(|mut e| {
                                e.offset = base;
                                e.file = self.file.data_file_name(file).map(Into::into);
                                e
                            }),
                        )
                    }
                    None => self.inner = None,
                }
            }
            let r = match self.outer.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if r.header.kind == RecordType::COMPRESSED {
                match self.file.decompressed(r.file, r.offset) {
                    Ok(buf) => {
                        self.inner =
                            Some((RawRecords::new(buf, self.file.endian), r.file, r.offset));
                        continue;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            return Some(Ok(r));
        }
    }
}

/// Time-ordered records ([`PerfFile::ordered_records`]).
pub struct OrderedRecords<'f> {
    file: &'f PerfFile<'f>,
    inner: Records<'f>,
    queue: Vec<(u64, u64, RawRecord<'f>)>,
    ready: VecDeque<RawRecord<'f>>,
    next_flush: u64,
    max_time: u64,
    /// Newest time among queued records (0 when the queue is empty).
    queue_max_time: u64,
    last_flushed: u64,
    seq: u64,
    out_of_order: u64,
    done: bool,
    pending_error: Option<Error>,
}

impl OrderedRecords<'_> {
    /// Records delivered so far that were older than data already delivered
    /// (perf's "N out of order events recorded").
    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    fn flush(&mut self, limit: u64) {
        self.queue.sort_by_key(|e| (e.0, e.1));
        let n = self.queue.partition_point(|e| e.0 <= limit);
        if n > 0 {
            self.last_flushed = self.queue[n - 1].0;
        }
        for (_, _, r) in self.queue.drain(..n) {
            self.ready.push_back(r);
        }
        if self.queue.is_empty() {
            self.queue_max_time = 0;
        }
    }
}

impl<'f> Iterator for OrderedRecords<'f> {
    type Item = Result<RawRecord<'f>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(Ok(r));
            }
            if let Some(e) = self.pending_error.take() {
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            let r = match self.inner.next() {
                None => {
                    self.flush(u64::MAX);
                    self.done = true;
                    continue;
                }
                Some(Err(e)) => {
                    // Deliver what was queued, then the error.
                    self.flush(u64::MAX);
                    self.done = true;
                    self.pending_error = Some(e);
                    continue;
                }
                Some(Ok(r)) => r,
            };
            if r.header.kind == RecordType::FINISHED_ROUND {
                // perf handles the round marker first, then flushes; an
                // empty queue leaves the flush limit where it was.
                self.ready.push_back(r);
                if !self.queue.is_empty() {
                    let limit = self.next_flush;
                    self.flush(limit);
                    self.next_flush = self.max_time;
                }
                continue;
            }
            match self.file.record_time(&r) {
                // perf delivers records stamped 0 or ~0 (synthesized) at once.
                Some(t) if t != 0 && t != u64::MAX => {
                    if t < self.last_flushed {
                        self.out_of_order += 1;
                    }
                    // perf's max_timestamp follows the queue's tail: set when
                    // the record goes last (always so into an empty queue).
                    if self.queue.is_empty() || t >= self.queue_max_time {
                        self.max_time = t;
                    }
                    self.queue_max_time = self.queue_max_time.max(t);
                    self.queue.push((t, self.seq, r));
                    self.seq += 1;
                }
                _ => self.ready.push_back(r),
            }
        }
    }
}
