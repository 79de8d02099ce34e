//! Getting a perf.data into memory: a file is memory-mapped, `-` (stdin) is
//! read to the end (pipe mode streams cannot be mapped), and a directory
//! (`perf record --threads`) is its header file `data` and its `data.N`
//! files.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

/// The bytes of an input perf.data, and its name for messages.
pub struct Input {
    bytes: Bytes,
    /// A directory's data files: (name for messages, bytes), by number.
    data_files: Vec<(String, Bytes)>,
    /// The name to use in messages (`-` shown as `<stdin>`).
    pub name: String,
    /// Modification time of a file input (for "captured on").
    pub mtime: Option<std::time::SystemTime>,
}

enum Bytes {
    Mapped(prec_record::mapped::MappedFile),
    Owned(Vec<u8>),
}

impl Input {
    /// Opens `path`, or standard input for `-`. Unless `force`, a file must
    /// belong to the current user or root, as perf requires (`-f`
    /// overrides).
    pub fn open(path: &Path, force: bool) -> Result<Input> {
        if path == Path::new("-") {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .context("reading perf.data from standard input")?;
            // perf stamps "captured on" with what fstat(0) says: the
            // redirected file's mtime (or now, for a real pipe).
            let mtime = std::fs::metadata("/dev/stdin")
                .and_then(|m| m.modified())
                .ok();
            return Ok(Input {
                bytes: Bytes::Owned(buf),
                data_files: Vec::new(),
                name: "<stdin>".into(),
                mtime,
            });
        }
        let name = path.display().to_string();
        let meta = std::fs::metadata(path).with_context(|| format!("cannot open {name}"))?;
        if meta.is_dir() {
            return Self::open_directory(path, force);
        }
        let (bytes, mtime) = Self::open_file(path, force)?;
        Ok(Input {
            bytes,
            data_files: Vec::new(),
            name,
            mtime,
        })
    }

    /// A directory-format perf.data: perf reads the header from `DIR/data`
    /// and, when its DIR_FORMAT feature says so, the records of every
    /// `DIR/data.*` file too.
    fn open_directory(path: &Path, force: bool) -> Result<Input> {
        let (bytes, mtime) = Self::open_file(&path.join("data"), force)?;
        let name = path.display().to_string();
        // perf 6.1's perf_data__open_dir takes the files in readdir order,
        // unsorted, and that order decides which file's record comes first
        // among records of the same time; std's read_dir is readdir.
        let mut data_files = Vec::new();
        let entries = std::fs::read_dir(path).with_context(|| format!("cannot list {name}"))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {name}"))?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if !file_name.starts_with("data.") {
                continue;
            }
            let is_file = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file());
            if is_file {
                let (bytes, _) = Self::open_file(&path.join(&file_name), true)?;
                data_files.push((format!("{name}/{file_name}"), bytes));
            }
        }
        Ok(Input {
            bytes,
            data_files,
            name,
            mtime,
        })
    }

    /// A file's bytes, mapped where possible, and its modification time.
    fn open_file(path: &Path, force: bool) -> Result<(Bytes, Option<std::time::SystemTime>)> {
        let name = path.display().to_string();
        let file = File::open(path).with_context(|| format!("cannot open {name}"))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot stat {name}"))?;
        if meta.is_dir() {
            anyhow::bail!("{name} is a directory, expected a perf.data file");
        }
        {
            use std::os::unix::fs::MetadataExt;
            // The owner of /proc/self is this process's effective uid.
            let euid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
            if !force && meta.uid() != 0 && euid.is_some_and(|u| u != meta.uid()) {
                anyhow::bail!("File {name} not owned by current user or root (use -f to override)");
            }
        }
        let bytes = if meta.len() == 0 {
            Bytes::Owned(Vec::new())
        } else if meta.file_type().is_file() {
            let map = prec_record::mapped::MappedFile::map(&file)
                .with_context(|| format!("cannot map {name}"))?;
            Bytes::Mapped(map)
        } else {
            let mut buf = Vec::new();
            (&file)
                .read_to_end(&mut buf)
                .with_context(|| format!("cannot read {name}"))?;
            Bytes::Owned(buf)
        };
        Ok((bytes, meta.modified().ok()))
    }

    /// Lets the pages of a mapped input before `end` leave memory (see
    /// [`prec_record::mapped::MappedFile::release_prefix`]); nothing for
    /// standard input.
    pub fn release_prefix(&self, end: u64) {
        if let Bytes::Mapped(m) = &self.bytes {
            m.release_prefix(usize::try_from(end).unwrap_or(usize::MAX));
        }
    }

    /// The whole input (a directory's header file).
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// Parses the perf.data header, naming the input in any error.
    pub fn parse(&self) -> Result<prec_format::PerfFile<'_>> {
        if self.bytes().is_empty() {
            anyhow::bail!("{}: file is empty, not a perf.data", self.name);
        }
        let mut file = prec_format::PerfFile::parse(self.bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.name))?;
        if file.feature(prec_format::FeatureId::DIR_FORMAT).is_some() {
            file.add_data_files(
                self.data_files
                    .iter()
                    .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
                    .collect(),
            );
        }
        Ok(file)
    }
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}
