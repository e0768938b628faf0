//! The check of scripts/lambda_build.rs, shared by every Lambda binary's test
//! (`functions/*/tests/linked.rs`, `bench/hello/tests/linked.rs`, through `#[path]`):
//! the binary cargo built for the test (`CARGO_BIN_EXE_<name>`) is a fixed-address
//! executable with no relative relocation left for the loader. `make package` checks
//! its release zips' ELF type the same way.

/// ELF `e_type`: an executable at a fixed address, and a position-independent one.
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
/// `R_X86_64_RELATIVE` / `R_AARCH64_RELATIVE`: what the loader applies per pointer.
const RELATIVE: [u32; 2] = [8, 1027];

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

/// Panics unless the executable at `path` is linked at a fixed address (ELF `ET_EXEC`)
/// and carries no relative relocation.
pub fn assert_fixed_address(path: &str) {
    let elf = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (e_type, relative) = inspect(&elf);
    assert_eq!(
        e_type,
        ET_EXEC,
        "{path} is {} (see scripts/lambda_build.rs)",
        if e_type == ET_DYN {
            "position-independent"
        } else {
            "not an executable"
        }
    );
    assert_eq!(
        relative, 0,
        "{path}: relative relocations left for the loader"
    );
    // The inspection itself sees relocations where they are: this test's own
    // executable is linked as cargo links tests, position-independent.
    let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let (own_type, own_relative) = inspect(&own);
    assert_eq!(own_type, ET_DYN);
    assert!(
        own_relative > 100,
        "{own_relative} relative relocations in the test itself"
    );
}
