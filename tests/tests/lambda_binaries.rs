//! The Lambda binaries are linked as fixed-address executables (scripts/lambda_build.rs):
//! no relative relocations for the loader to apply at a cold start. `make test` builds
//! every target of the workspace (`cargo test --workspace --all-targets`) before it runs
//! this, so the debug binaries next to this test are the functions as built from this
//! tree; `make package` checks its release zips the same way.

use std::path::PathBuf;

const LAMBDAS: [&str; 5] = [
    "ingestion",
    "matching",
    "document-output",
    "sweeper",
    "bench-hello",
];

/// ELF `e_type`: an executable at a fixed address, and a position-independent one.
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
/// `R_X86_64_RELATIVE` / `R_AARCH64_RELATIVE`: what the loader applies per pointer.
const RELATIVE: [u32; 2] = [8, 1027];

/// `target/<profile>`, where cargo put this test's own executable (`…/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The ELF type and the number of relative relocations in its `SHT_RELA` sections
/// (a little-endian ELF64, as both Lambda architectures are).
fn inspect(elf: &[u8]) -> (u16, usize) {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!((elf[4], elf[5]), (2, 1), "not a little-endian ELF64");
    let e_type = u16_at(elf, 16);
    let (shoff, shentsize, shnum) = (
        u64_at(elf, 0x28) as usize,
        u16_at(elf, 0x3a) as usize,
        u16_at(elf, 0x3c) as usize,
    );
    let mut relative = 0;
    for i in 0..shnum {
        let sh = &elf[shoff + i * shentsize..shoff + (i + 1) * shentsize];
        const SHT_RELA: u32 = 4;
        if u32_at(sh, 4) != SHT_RELA {
            continue;
        }
        let (offset, size, entsize) = (
            u64_at(sh, 0x18) as usize,
            u64_at(sh, 0x20) as usize,
            u64_at(sh, 0x38) as usize,
        );
        for entry in elf[offset..offset + size].chunks_exact(entsize.max(24)) {
            // r_info: the symbol in the high 32 bits, the type in the low ones.
            if RELATIVE.contains(&u32_at(entry, 8)) {
                relative += 1;
            }
        }
    }
    (e_type, relative)
}

#[test]
fn every_lambda_binary_is_a_fixed_address_executable_without_relative_relocations() {
    let dir = profile_dir();
    for name in LAMBDAS {
        let path = dir.join(name);
        let elf = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}): build every target first, as `make test` does \
                 (cargo test --workspace --all-targets)",
                path.display()
            )
        });
        let (e_type, relative) = inspect(&elf);
        assert_eq!(
            e_type,
            ET_EXEC,
            "{name} is {} (see scripts/lambda_build.rs)",
            if e_type == ET_DYN {
                "position-independent"
            } else {
                "not an executable"
            }
        );
        assert_eq!(
            relative, 0,
            "{name}: relative relocations left for the loader"
        );
    }
}

#[test]
fn the_inspection_sees_the_relocations_of_a_position_independent_executable() {
    // This test binary itself is linked as cargo links tests: position-independent,
    // with the relocations the Lambda binaries no longer carry.
    let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let (e_type, relative) = inspect(&own);
    assert_eq!(e_type, ET_DYN);
    assert!(relative > 100, "{relative} relative relocations");
}
