//! The vendored crc-fast (vendor/crc-fast/PATCH.md) builds its software fallback's lookup
//! tables at first use instead of compiling 50 of them into every binary. This machine's
//! CPU takes the SIMD path, as Lambda's do, so the fallback is reached through the patch's
//! `software_checksum` and compared with the SIMD path for every named algorithm.

#![allow(deprecated)]

use crc_fast::CrcAlgorithm::{self, *};

const ALGORITHMS: [CrcAlgorithm; 50] = [
    Crc16Arc,
    Crc16Cdma2000,
    Crc16Cms,
    Crc16Dds110,
    Crc16DectR,
    Crc16DectX,
    Crc16Dnp,
    Crc16En13757,
    Crc16Genibus,
    Crc16Gsm,
    Crc16Ibm3740,
    Crc16IbmSdlc,
    Crc16IsoIec144433A,
    Crc16Kermit,
    Crc16Lj1200,
    Crc16M17,
    Crc16MaximDow,
    Crc16Mcrf4xx,
    Crc16Modbus,
    Crc16Nrsc5,
    Crc16OpensafetyA,
    Crc16OpensafetyB,
    Crc16Profibus,
    Crc16Riello,
    Crc16SpiFujitsu,
    Crc16T10Dif,
    Crc16Teledisk,
    Crc16Tms37157,
    Crc16Umts,
    Crc16Usb,
    Crc16Xmodem,
    Crc32Aixm,
    Crc32Autosar,
    Crc32Base91D,
    Crc32Bzip2,
    Crc32CdRomEdc,
    Crc32Cksum,
    Crc32Iscsi,
    Crc32IsoHdlc,
    Crc32Jamcrc,
    Crc32Mef,
    Crc32Mpeg2,
    Crc32Xfer,
    Crc64Ecma182,
    Crc64GoIso,
    Crc64Ms,
    Crc64Nvme,
    Crc64Redis,
    Crc64We,
    Crc64Xz,
];

/// Deterministic bytes (xorshift64), so a failure names a reproducible input.
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Upstream's software fallback disagrees with its SIMD path for these three CRC-16s
/// (reflected, with an initial value that is not its own bit reversal), before and after
/// the patch alike; S3 uses none of them. Their fallback output on `bytes(1000, 7)`,
/// recorded from crc-fast 1.9.0 unpatched, pins "unchanged by the patch" for them.
const UPSTREAM_FALLBACK_DIFFERS: [(CrcAlgorithm, u64); 3] = [
    (Crc16IsoIec144433A, 0x00d4),
    (Crc16Riello, 0x8136),
    (Crc16Tms37157, 0x761c),
];

fn upstream_differs(algorithm: CrcAlgorithm) -> bool {
    UPSTREAM_FALLBACK_DIFFERS
        .iter()
        .any(|(d, _)| *d == algorithm)
}

#[test]
fn the_software_fallback_agrees_with_the_simd_path_for_every_algorithm() {
    let lengths = [
        0, 1, 7, 8, 15, 16, 17, 31, 63, 64, 65, 127, 255, 256, 1000, 4099, 65_537,
    ];
    for (algorithm, upstream) in UPSTREAM_FALLBACK_DIFFERS {
        assert_eq!(
            crc_fast::software_checksum(algorithm, &bytes(1000, 7)),
            upstream,
            "{algorithm:?}: the fallback's output moved away from upstream's"
        );
    }
    for algorithm in ALGORITHMS.into_iter().filter(|&a| !upstream_differs(a)) {
        let check = b"123456789";
        assert_eq!(
            crc_fast::software_checksum(algorithm, check),
            crc_fast::checksum(algorithm, check),
            "{algorithm:?} on the check string"
        );
        for (i, len) in lengths.into_iter().enumerate() {
            let data = bytes(len, 0x9e37_79b9_7f4a_7c15 ^ i as u64);
            assert_eq!(
                crc_fast::software_checksum(algorithm, &data),
                crc_fast::checksum(algorithm, &data),
                "{algorithm:?} on {len} bytes (seed index {i})"
            );
        }
    }
}

#[test]
fn the_checksums_s3_uses_keep_their_catalogue_check_values() {
    // aws-smithy-checksums: CRC32, CRC32C and CRC64/NVME (reveng catalogue check values).
    for (algorithm, check) in [
        (Crc32IsoHdlc, 0xcbf4_3926),
        (Crc32Iscsi, 0xe306_9283),
        (Crc64Nvme, 0xae8b_1486_0a79_9888),
    ] {
        // Twice: the second call reads the table the first one built.
        for _ in 0..2 {
            assert_eq!(
                crc_fast::software_checksum(algorithm, b"123456789"),
                check,
                "{algorithm:?}"
            );
            assert_eq!(
                crc_fast::checksum(algorithm, b"123456789"),
                check,
                "{algorithm:?}"
            );
        }
    }
}

#[test]
fn tables_are_built_once_per_algorithm_from_many_threads() {
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let data = bytes(10_000, t);
                ALGORITHMS
                    .into_iter()
                    .filter(|&a| !upstream_differs(a))
                    .map(|a| {
                        (
                            crc_fast::software_checksum(a, &data),
                            crc_fast::checksum(a, &data),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for thread in threads {
        for (software, simd) in thread.join().unwrap() {
            assert_eq!(software, simd);
        }
    }
}
