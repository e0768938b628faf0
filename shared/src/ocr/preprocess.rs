//! The one preprocessing pass a poor scan gets before it is read again (seed 003):
//! grayscale, contrast stretch (darkest pixel → black, brightest → white), unsharp mask.
//!
//! Decoding is bounded: an image larger than [`MAX_IMAGE_SIDE`] on a side or needing more
//! than [`MAX_IMAGE_ALLOC`] bytes is refused before any pixel buffer is allocated, so one
//! hostile or oversized file cannot exhaust the function's memory.

use std::io::Cursor;

use bytes::Bytes;
use image::{GrayImage, ImageFormat, ImageReader, Limits};
use pdf_extract::{Document, Object};

use super::{OcrError, on_cpu};

/// The longest side of an image the pipeline decodes: 600 dpi on A3 is about 10,000 px.
pub const MAX_IMAGE_SIDE: u32 = 12_000;
/// The most memory one image's decoding may allocate: a 600 dpi A4 color scan needs
/// about 105 MB.
pub const MAX_IMAGE_ALLOC: u64 = 256 * 1024 * 1024;

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_IMAGE_ALLOC);
    limits
}

/// Decodes an image within the limits; `format` when known, else guessed.
fn decode(bytes: &[u8], format: Option<ImageFormat>) -> Result<GrayImage, OcrError> {
    let mut reader = ImageReader::new(Cursor::new(bytes));
    match format {
        Some(format) => reader.set_format(format),
        None => {
            reader = reader
                .with_guessed_format()
                .map_err(|e| OcrError::BadImage(image::ImageError::IoError(e)))?
        }
    }
    reader.limits(limits());
    let image = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(limit) => OcrError::TooLarge {
            what: format!(
                "an image over {MAX_IMAGE_SIDE} px on a side or {} MiB decoded ({limit})",
                MAX_IMAGE_ALLOC / (1024 * 1024)
            ),
        },
        other => OcrError::BadImage(other),
    })?;
    Ok(image.into_luma8())
}

/// Grayscale contrast stretch and unsharp mask.
fn enhance(mut gray: GrayImage) -> GrayImage {
    let (lo, hi) = gray.pixels().fold((u8::MAX, u8::MIN), |(lo, hi), p| {
        (lo.min(p.0[0]), hi.max(p.0[0]))
    });
    if hi > lo {
        let scale = 255.0 / f32::from(hi - lo);
        for p in gray.pixels_mut() {
            p.0[0] = (f32::from(p.0[0] - lo) * scale).round() as u8;
        }
    }
    image::imageops::unsharpen(&gray, 1.0, 5)
}

/// The most bytes Textract's synchronous `DetectDocumentText` reads (10 MB), and the
/// longest side it accepts (10,000 px): AWS's documented limits for the synchronous API.
pub const TEXTRACT_SYNC_MAX_BYTES: usize = 10 * 1000 * 1000;
pub const TEXTRACT_MAX_SIDE: u32 = 10_000;

/// A preprocessed image, encoded so Textract's synchronous API takes it.
#[derive(Debug, Clone)]
pub struct PreprocessedImage {
    pub bytes: Vec<u8>,
    /// PNG (lossless) when that fits, otherwise JPEG.
    pub format: ImageFormat,
}

impl PreprocessedImage {
    pub fn extension(&self) -> &'static str {
        if self.format == ImageFormat::Png {
            "png"
        } else {
            "jpg"
        }
    }

    pub fn content_type(&self) -> &'static str {
        if self.format == ImageFormat::Png {
            "image/png"
        } else {
            "image/jpeg"
        }
    }
}

/// Improves a poor image (PNG or JPEG) once, within what Textract's synchronous API
/// reads: scaled down to [`TEXTRACT_MAX_SIDE`] when larger, stored as PNG, or as JPEG
/// when the PNG would exceed [`TEXTRACT_SYNC_MAX_BYTES`] (a grayscale PNG of a 600 dpi
/// scan easily does). `None` when even the JPEG would: the caller keeps its first
/// reading. Runs on the blocking pool. An image beyond the decoding limits is
/// [`OcrError::TooLarge`] (permanent).
pub async fn preprocess_image(bytes: Bytes) -> Result<Option<PreprocessedImage>, OcrError> {
    on_cpu(move || {
        fit_for_textract(
            enhance(within_side(decode(&bytes, None)?)),
            TEXTRACT_SYNC_MAX_BYTES,
        )
    })
    .await?
}

/// Scales an image whose longer side exceeds [`TEXTRACT_MAX_SIDE`] down to it.
fn within_side(gray: GrayImage) -> GrayImage {
    let (w, h) = gray.dimensions();
    let longest = w.max(h);
    if longest <= TEXTRACT_MAX_SIDE {
        return gray;
    }
    let scale = f64::from(TEXTRACT_MAX_SIDE) / f64::from(longest);
    let size = |side: u32| ((f64::from(side) * scale).round() as u32).clamp(1, TEXTRACT_MAX_SIDE);
    image::imageops::resize(
        &gray,
        size(w),
        size(h),
        image::imageops::FilterType::Triangle,
    )
}

/// PNG when it fits in `max_bytes`, else JPEG (quality 90) when that fits, else `None`.
fn fit_for_textract(
    gray: GrayImage,
    max_bytes: usize,
) -> Result<Option<PreprocessedImage>, OcrError> {
    let mut png = Cursor::new(Vec::new());
    gray.write_to(&mut png, ImageFormat::Png)
        .map_err(OcrError::BadImage)?;
    let png = png.into_inner();
    if png.len() <= max_bytes {
        return Ok(Some(PreprocessedImage {
            bytes: png,
            format: ImageFormat::Png,
        }));
    }
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&gray)
        .map_err(OcrError::BadImage)?;
    if jpeg.len() <= max_bytes {
        return Ok(Some(PreprocessedImage {
            bytes: jpeg,
            format: ImageFormat::Jpeg,
        }));
    }
    tracing::info!(
        png_bytes = png.len(),
        jpeg_bytes = jpeg.len(),
        max_bytes,
        "the preprocessed image exceeds what Textract reads synchronously"
    );
    Ok(None)
}

/// Improves a poor scanned PDF once: every page image stored as JPEG (`DCTDecode`, what
/// scanners write for gray and color scans) is decoded, enhanced and stored back as a
/// grayscale JPEG; everything else (text, vector graphics, other image encodings) is
/// kept as it is. Returns the new PDF, or `None` when it holds no image this can improve.
/// Runs on the blocking pool; images beyond the limits are left as they are.
pub async fn preprocess_pdf(bytes: Bytes) -> Result<Option<Vec<u8>>, OcrError> {
    on_cpu(move || {
        let mut document =
            Document::load_mem(&bytes).map_err(|e| OcrError::BadPdf(e.to_string()))?;
        let mut improved = 0;
        for object in document.objects.values_mut() {
            let Object::Stream(stream) = object else {
                continue;
            };
            let is_image = stream
                .dict
                .get(b"Subtype")
                .and_then(Object::as_name)
                .is_ok_and(|name| name == b"Image");
            let is_jpeg = stream
                .filters()
                .is_ok_and(|filters| filters == [b"DCTDecode".as_slice()]);
            if !is_image || !is_jpeg {
                continue;
            }
            let gray = match decode(&stream.content, Some(ImageFormat::Jpeg)) {
                Ok(gray) => gray,
                Err(e) => {
                    tracing::warn!(error.message = %e, "a page image could not be preprocessed; kept as it is");
                    continue;
                }
            };
            let mut jpeg = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
                .encode_image(&enhance(gray))
                .map_err(OcrError::BadImage)?;
            stream
                .dict
                .set("ColorSpace", Object::Name(b"DeviceGray".to_vec()));
            stream.dict.set("BitsPerComponent", Object::Integer(8));
            stream.dict.remove(b"Decode");
            stream.dict.remove(b"DecodeParms");
            stream.set_content(jpeg);
            improved += 1;
        }
        if improved == 0 {
            return Ok(None);
        }
        let mut out = Vec::new();
        document
            .save_to(&mut out)
            .map_err(|e| OcrError::BadPdf(e.to_string()))?;
        Ok(Some(out))
    })
    .await?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(img: &GrayImage) -> Bytes {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner().into()
    }

    #[tokio::test]
    async fn preprocessing_stretches_contrast_to_the_full_range() {
        let mut img = GrayImage::new(8, 8);
        for (x, _, p) in img.enumerate_pixels_mut() {
            p.0[0] = 100 + (x as u8) * 5; // a washed-out 100..135 range
        }

        let out = preprocess_image(png(&img)).await.unwrap().expect("fits");

        assert_eq!(out.format, ImageFormat::Png, "a small image stays lossless");
        let result = image::load_from_memory(&out.bytes).unwrap().to_luma8();
        let (lo, hi) = result
            .pixels()
            .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
        assert!(lo <= 10 && hi >= 245, "stretched to {lo}..{hi}");
    }

    /// A PNG whose header declares `width` x `height` gray pixels, followed by almost no
    /// data: what a decoder would allocate for is the header's promise.
    fn png_header_only(width: u32, height: u32) -> Bytes {
        fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
            out.extend((data.len() as u32).to_be_bytes());
            let start = out.len();
            out.extend(kind);
            out.extend(data);
            let crc = crc32(&out[start..]);
            out.extend(crc.to_be_bytes());
        }
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = 0xffff_ffffu32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        0xedb8_8320 ^ (crc >> 1)
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        }
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::new();
        ihdr.extend(width.to_be_bytes());
        ihdr.extend(height.to_be_bytes());
        ihdr.extend([8, 0, 0, 0, 0]); // 8-bit gray, deflate, no filter, no interlace
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(
            &mut out,
            b"IDAT",
            &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
        );
        chunk(&mut out, b"IEND", &[]);
        out.into()
    }

    #[tokio::test]
    async fn an_image_beyond_the_limits_is_refused_before_it_is_decoded() {
        // 15,000 x 15,000 gray: 225 MB, under the image crate's own 512 MiB default.
        let err = preprocess_image(png_header_only(15_000, 15_000))
            .await
            .unwrap_err();
        assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
        assert!(!crate::retry::Classify::is_transient(&err));
    }

    /// Gray noise: what compresses worst, losslessly.
    fn noise(width: u32, height: u32) -> GrayImage {
        let mut state = 0x2545_f491_u32;
        GrayImage::from_fn(width, height, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            image::Luma([(state >> 24) as u8])
        })
    }

    #[test]
    fn an_image_whose_png_is_too_large_for_textract_is_stored_as_jpeg_or_not_at_all() {
        let img = noise(400, 400);
        let png_len = png(&img).len();
        let fits_as_jpeg = fit_for_textract(img.clone(), png_len - 1).unwrap().unwrap();
        assert_eq!(fits_as_jpeg.format, ImageFormat::Jpeg);
        assert!(fits_as_jpeg.bytes.len() < png_len);
        assert_eq!(
            image::load_from_memory(&fits_as_jpeg.bytes)
                .unwrap()
                .to_luma8()
                .dimensions(),
            (400, 400)
        );
        assert!(
            fit_for_textract(img, 1_000).unwrap().is_none(),
            "nothing fits in 1 kB"
        );
    }

    #[test]
    fn an_image_longer_than_textract_reads_is_scaled_down_to_its_limit() {
        let scaled = within_side(GrayImage::new(TEXTRACT_MAX_SIDE + 2_000, 60));
        assert_eq!(scaled.dimensions(), (TEXTRACT_MAX_SIDE, 50));
        let kept = within_side(GrayImage::new(TEXTRACT_MAX_SIDE, 60));
        assert_eq!(kept.dimensions(), (TEXTRACT_MAX_SIDE, 60));
    }
}
