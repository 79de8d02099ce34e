//! GNU build-ids (`NT_GNU_BUILD_ID` notes) for the BUILD_ID feature section.
//!
//! * [`elf_build_id`] / [`file_build_id`]: an ELF image or file, via the
//!   `object` crate (`.note.gnu.build-id` section or `PT_NOTE` segments);
//! * [`kernel_build_id`]: the running kernel, from `/sys/kernel/notes`
//!   (a raw note list, parsed by [`parse_notes_build_id`]);
//! * [`vdso_build_id`]: the `[vdso]` of this process (identical for all
//!   processes of the same kernel and ABI), copied from memory by
//!   [`crate::sys::vdso_image`].
//!
//! [`to_hex`] formats an id like `readelf -n` / perf do (lowercase hex).
#![forbid(unsafe_code)]

use std::io;
use std::path::Path;

use object::Object;

/// Maximum build-id length perf stores (20 bytes for SHA-1).
pub const BUILD_ID_MAX: usize = 20;

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// The GNU build-id of an in-memory ELF image; `Ok(None)` if it has none.
pub fn elf_build_id(data: &[u8]) -> io::Result<Option<Vec<u8>>> {
    let file = object::File::parse(data).map_err(invalid)?;
    let id = file.build_id().map_err(invalid)?;
    Ok(id.map(<[u8]>::to_vec))
}

/// The GNU build-id of an ELF file on disk; `Ok(None)` if it has none.
pub fn file_build_id(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let data = std::fs::read(path)?;
    elf_build_id(&data)
}

/// Finds the first `NT_GNU_BUILD_ID` (type 3, name "GNU") in a raw ELF note
/// list (4-byte aligned, native endian), as found in `/sys/kernel/notes`.
pub fn parse_notes_build_id(notes: &[u8]) -> Option<Vec<u8>> {
    let u32_at = |off: usize| -> Option<u32> {
        let b = notes.get(off..off + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    let mut off = 0usize;
    while off + 12 <= notes.len() {
        let namesz = u32_at(off)? as usize;
        let descsz = u32_at(off + 4)? as usize;
        let ntype = u32_at(off + 8)?;
        let name_off = off + 12;
        let desc_off = name_off.checked_add(align4(namesz)?)?;
        let next = desc_off.checked_add(align4(descsz)?)?;
        let name = notes.get(name_off..name_off.checked_add(namesz)?)?;
        let desc = notes.get(desc_off..desc_off.checked_add(descsz)?)?;
        if ntype == 3 && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        if next <= off {
            return None;
        }
        off = next;
    }
    None
}

/// Build-id of the running kernel (`/sys/kernel/notes`); `Ok(None)` if the
/// notes have none.
pub fn kernel_build_id() -> io::Result<Option<Vec<u8>>> {
    let notes = std::fs::read("/sys/kernel/notes")?;
    Ok(parse_notes_build_id(&notes))
}

/// Build-id of the `[vdso]` of this process; `Ok(None)` without a vDSO or
/// build-id.
pub fn vdso_build_id() -> io::Result<Option<Vec<u8>>> {
    match crate::sys::vdso_image() {
        Some(img) => elf_build_id(&img),
        None => Ok(None),
    }
}

/// Lowercase hex of a build-id.
pub fn to_hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readelf_build_id(path: &str) -> Option<String> {
        let out = std::process::Command::new("readelf")
            .args(["-n", path])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("Build ID: ")
                .map(|s| s.trim().to_string())
        })
    }

    #[test]
    fn bin_ls_matches_readelf() {
        let ours = file_build_id(Path::new("/bin/ls"))
            .unwrap()
            .expect("/bin/ls has a build-id");
        match readelf_build_id("/bin/ls") {
            Some(want) => assert_eq!(to_hex(&ours), want),
            None => println!("skipping readelf comparison: readelf unavailable"),
        }
        assert!(ours.len() <= BUILD_ID_MAX);
    }

    #[test]
    fn kernel_and_vdso() {
        if let Some(id) = kernel_build_id().unwrap() {
            assert!(!id.is_empty() && id.len() <= BUILD_ID_MAX);
        }
        let v = vdso_build_id().unwrap();
        if crate::sys::vdso_base() != 0 {
            assert!(v.is_some_and(|id| id.len() == 20), "vdso has a build-id");
        }
    }

    #[test]
    fn notes_parser() {
        let mut n = Vec::new();
        // a non-GNU note first: name "Xen\0", desc 4 bytes, type 6
        for v in [4u32, 4, 6] {
            n.extend(v.to_ne_bytes());
        }
        n.extend(b"Xen\0");
        n.extend([1, 2, 3, 4]);
        for v in [4u32, 3, 3] {
            n.extend(v.to_ne_bytes());
        }
        n.extend(b"GNU\0");
        n.extend([0xaa, 0xbb, 0xcc, 0]);
        assert_eq!(parse_notes_build_id(&n), Some(vec![0xaa, 0xbb, 0xcc]));
        assert_eq!(parse_notes_build_id(&n[..20]), None);
        assert_eq!(parse_notes_build_id(&[0xff; 16]), None);
    }

    #[test]
    fn not_elf() {
        assert!(elf_build_id(b"hello").is_err());
    }
}
