//! The one preprocessing pass a poor scan gets before it is read again (seed 003):
//! grayscale, contrast stretch (darkest pixel → black, brightest → white), unsharp mask.
//!
//! Memory is budgeted by pixels, not by file bytes: a 2 MB JPEG can declare
//! 9000 × 9000 pixels. Decoding is bounded: an image larger than [`MAX_IMAGE_SIDE`] on a
//! side or needing more than [`MAX_IMAGE_ALLOC`] bytes is refused before any pixel
//! buffer is allocated. A decoded image is scaled down to [`ENHANCE_MAX_PIXELS`] *before*
//! it is enhanced, and the enhancement works in place on bytes (no floating-point
//! planes), so its working set is a few bytes per pixel of the scaled image. What a job
//! needs at its peak is known from the header before it starts ([`image_job_bytes`]),
//! and the job waits for that much of the memory budget ([`super::on_cpu`]).

use std::io::Cursor;

use bytes::Bytes;
use image::{ColorType, DynamicImage, GrayImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use pdf_extract::{Document, Object};

use super::OcrError;

/// The longest side of an image the pipeline decodes: 600 dpi on A3 is about 10,000 px.
pub const MAX_IMAGE_SIDE: u32 = 12_000;
/// The most memory one image's decoding may allocate: a 600 dpi A4 color scan needs
/// about 105 MB.
pub const MAX_IMAGE_ALLOC: u64 = 256 * 1024 * 1024;
/// The most pixels an image is enhanced (and sent to OCR) at: A4 at 400 dpi. Larger
/// images are scaled down first; OCR reads 300 dpi well.
pub const ENHANCE_MAX_PIXELS: u64 = 16_000_000;
/// The most pixels of one page image of a PDF that preprocessing decodes: A4 at
/// 600 dpi. Larger page images are kept as they are.
pub const PDF_IMAGE_MAX_PIXELS: u64 = 36_000_000;

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_IMAGE_ALLOC);
    limits
}

fn too_large(limit: impl std::fmt::Display) -> OcrError {
    OcrError::TooLarge {
        what: format!(
            "an image over {MAX_IMAGE_SIDE} px on a side or {} MiB decoded ({limit})",
            MAX_IMAGE_ALLOC / (1024 * 1024)
        ),
    }
}

fn image_error(e: image::ImageError) -> OcrError {
    match e {
        image::ImageError::Limits(limit) => too_large(limit),
        other => OcrError::BadImage(other),
    }
}

/// A decoder within the limits; `format` when known, else guessed.
fn decoder(bytes: &[u8], format: Option<ImageFormat>) -> Result<impl ImageDecoder + '_, OcrError> {
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
    reader.into_decoder().map_err(image_error)
}

/// Bytes that decoding and enhancing an image of this size needs at its peak: the
/// decoded buffer in its own color type and its gray copy, then the scaled image, its
/// blur, the result and the encoder's output.
fn decode_and_enhance_bytes(width: u32, height: u32, color: ColorType) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    pixels * (u64::from(color.bytes_per_pixel()) + 1) + pixels.min(ENHANCE_MAX_PIXELS) * 4
}

/// What preprocessing this image needs at its peak, read from its header only (no
/// pixel is decoded): the file, the decoded pixels, the working set of the enhancement.
/// An image beyond the decoding limits is [`OcrError::TooLarge`]; one whose header
/// cannot be read is [`OcrError::BadImage`].
pub fn image_job_bytes(bytes: &[u8]) -> Result<u64, OcrError> {
    let decoder = decoder(bytes, None)?;
    let (width, height) = decoder.dimensions();
    Ok(bytes.len() as u64 + decode_and_enhance_bytes(width, height, decoder.color_type()))
}

/// What preprocessing a PDF needs at its peak: the file and its parsed objects (at most
/// [`super::pdf_object_limit`]), the new file, and one page image at a time at its
/// largest.
pub fn pdf_preprocess_job_bytes(pdf_len: usize) -> u64 {
    pdf_len as u64
        + super::pdf_object_limit(pdf_len) * super::PDF_OBJECT_BYTES
        + decode_and_enhance_bytes(
            PDF_IMAGE_MAX_PIXELS as u32,
            1,
            ColorType::Rgb8, // scanners' JPEGs: gray or RGB
        )
}

/// Decodes an image of at most `max_pixels` to gray.
fn decode(
    bytes: &[u8],
    format: Option<ImageFormat>,
    max_pixels: u64,
) -> Result<GrayImage, OcrError> {
    let decoder = decoder(bytes, format)?;
    let (width, height) = decoder.dimensions();
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(too_large(format!(
            "{width} x {height} px is more than {max_pixels} pixels"
        )));
    }
    let image = DynamicImage::from_decoder(decoder).map_err(image_error)?;
    Ok(image.into_luma8())
}

/// The size an image is enhanced at: at most [`ENHANCE_MAX_PIXELS`], at most
/// `max_side` on its longer side, never larger than it is.
fn working_size(width: u32, height: u32, max_side: u32) -> (u32, u32) {
    let pixels = f64::from(width) * f64::from(height);
    let scale = (ENHANCE_MAX_PIXELS as f64 / pixels)
        .sqrt()
        .min(f64::from(max_side) / f64::from(width.max(height)))
        .min(1.0);
    if scale >= 1.0 {
        return (width, height);
    }
    let side = |s: u32| ((f64::from(s) * scale).floor() as u32).max(1);
    (side(width), side(height))
}

/// Scales down by averaging each output pixel's area of the source: no buffer but the
/// result, so the scaling itself costs nothing beyond the smaller image.
fn shrink(src: &GrayImage, width: u32, height: u32) -> GrayImage {
    let (sw, sh) = src.dimensions();
    if (sw, sh) == (width, height) {
        return src.clone();
    }
    let span = |i: u32, n: u32, of: u32| {
        let start = (u64::from(i) * u64::from(of) / u64::from(n)) as u32;
        let end = ((u64::from(i + 1) * u64::from(of) / u64::from(n)) as u32).max(start + 1);
        (start, end.min(of))
    };
    let raw = src.as_raw();
    GrayImage::from_fn(width, height, |x, y| {
        let (x0, x1) = span(x, width, sw);
        let (y0, y1) = span(y, height, sh);
        let mut sum = 0u64;
        for row in y0..y1 {
            let line = row as usize * sw as usize;
            sum += raw[line + x0 as usize..line + x1 as usize]
                .iter()
                .map(|&p| u64::from(p))
                .sum::<u64>();
        }
        let count = u64::from(x1 - x0) * u64::from(y1 - y0);
        image::Luma([((sum + count / 2) / count) as u8])
    })
}

/// Contrast stretch, in place.
fn stretch(gray: &mut GrayImage) {
    let (lo, hi) = gray.pixels().fold((u8::MAX, u8::MIN), |(lo, hi), p| {
        (lo.min(p.0[0]), hi.max(p.0[0]))
    });
    if hi > lo {
        let scale = 255.0 / f32::from(hi - lo);
        for p in gray.pixels_mut() {
            p.0[0] = (f32::from(p.0[0] - lo) * scale).round() as u8;
        }
    }
}

/// Unsharp mask with a Gaussian of σ ≈ 1 (the binomial kernel 1 4 6 4 1, separable) and
/// a threshold, as `image::imageops::unsharpen(img, 1.0, threshold)` does, but on bytes:
/// one extra byte per pixel for the horizontal pass instead of two planes of `f32`.
fn unsharp(gray: &GrayImage, threshold: i32) -> GrayImage {
    const K: [u32; 5] = [1, 4, 6, 4, 1];
    let (w, h) = gray.dimensions();
    let (wi, hi) = (w as i64, h as i64);
    let src = gray.as_raw();
    let at = |x: i64, y: i64| {
        let (x, y) = (x.clamp(0, wi - 1), y.clamp(0, hi - 1));
        (y * wi + x) as usize
    };
    let mut horizontal = vec![0u8; src.len()];
    for y in 0..hi {
        for x in 0..wi {
            let sum: u32 = (0..5)
                .map(|i| K[i] * u32::from(src[at(x + i as i64 - 2, y)]))
                .sum();
            horizontal[(y * wi + x) as usize] = ((sum + 8) / 16) as u8;
        }
    }
    GrayImage::from_fn(w, h, |x, y| {
        let (x, y) = (i64::from(x), i64::from(y));
        let sum: u32 = (0..5)
            .map(|i| K[i] * u32::from(horizontal[at(x, y + i as i64 - 2)]))
            .sum();
        let blurred = ((sum + 8) / 16) as i32;
        let original = i32::from(src[at(x, y)]);
        let diff = original - blurred;
        image::Luma([if diff.abs() > threshold {
            (original + diff).clamp(0, 255) as u8
        } else {
            original as u8
        }])
    })
}

/// Scaled down to the working size (before anything else allocates per pixel),
/// stretched and sharpened.
fn enhance(gray: GrayImage, max_side: u32) -> GrayImage {
    let (width, height) = working_size(gray.width(), gray.height(), max_side);
    let mut small = if (width, height) == gray.dimensions() {
        gray
    } else {
        let small = shrink(&gray, width, height);
        drop(gray);
        small
    };
    stretch(&mut small);
    unsharp(&small, 5)
}

/// The most bytes Textract's synchronous `DetectDocumentText` reads (10 MB), and the
/// longest side it accepts (10,000 px): AWS's documented limits for the synchronous API.
pub const TEXTRACT_SYNC_MAX_BYTES: usize = 10 * 1000 * 1000;
pub const TEXTRACT_MAX_SIDE: u32 = 10_000;

/// Whether Textract's synchronous `DetectDocumentText` takes this image as it is: at
/// most [`TEXTRACT_SYNC_MAX_BYTES`], and at most [`TEXTRACT_MAX_SIDE`] on each side as its
/// header declares it (no pixel is decoded). AWS: "Amazon Textract supports images with
/// a resolution less than or equal to 10000 pixels on all sides", and synchronous
/// operations take files of up to 10 MB (docs.aws.amazon.com/textract/latest/dg/
/// limits-document.html). An image whose header cannot be read is left to Textract,
/// which answers for it.
pub fn textract_takes_image(bytes: &[u8]) -> bool {
    if bytes.len() > TEXTRACT_SYNC_MAX_BYTES {
        return false;
    }
    let dimensions = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()
        .and_then(|reader| reader.into_dimensions().ok());
    match dimensions {
        Some((width, height)) => width <= TEXTRACT_MAX_SIDE && height <= TEXTRACT_MAX_SIDE,
        None => true,
    }
}

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
/// reading. Scaled down to [`ENHANCE_MAX_PIXELS`] before it is enhanced. Runs in the
/// parsing sandbox (`docflow::sandbox`) once its peak memory ([`image_job_bytes`]) is
/// free in the budget. An image beyond the decoding limits, or needing more than the
/// whole budget, is [`OcrError::TooLarge`] (permanent).
pub async fn preprocess_image(bytes: Bytes) -> Result<Option<PreprocessedImage>, OcrError> {
    use crate::sandbox::{Header, Job, run, unexpected};
    let needs = image_job_bytes(&bytes)?;
    match run(Job::PreprocessImage, needs, bytes).await? {
        (Header::Image(Ok(Some(png))), bytes) => Ok(Some(PreprocessedImage {
            bytes,
            format: if png {
                ImageFormat::Png
            } else {
                ImageFormat::Jpeg
            },
        })),
        (Header::Image(Ok(None)), _) => Ok(None),
        (Header::Image(Err(e)), _) => Err(e.into()),
        (other, _) => Err(unexpected(Job::PreprocessImage, &other)),
    }
}

/// [`preprocess_image`]'s work, here and now: what the sandbox's child runs.
pub(crate) fn preprocess_image_now(bytes: &[u8]) -> Result<Option<PreprocessedImage>, OcrError> {
    crate::sandbox::progress(format_args!("the image"));
    fit_for_textract(
        enhance(decode(bytes, None, u64::MAX)?, TEXTRACT_MAX_SIDE),
        TEXTRACT_SYNC_MAX_BYTES,
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
/// Runs in the parsing sandbox; images beyond the limits are left as they are.
pub async fn preprocess_pdf(bytes: Bytes) -> Result<Option<Vec<u8>>, OcrError> {
    use crate::sandbox::{Header, Job, run, unexpected};
    match run(
        Job::PreprocessPdf,
        pdf_preprocess_job_bytes(bytes.len()),
        bytes,
    )
    .await?
    {
        (Header::Pdf(Ok(true)), pdf) => Ok(Some(pdf)),
        (Header::Pdf(Ok(false)), _) => Ok(None),
        (Header::Pdf(Err(e)), _) => Err(e.into()),
        (other, _) => Err(unexpected(Job::PreprocessPdf, &other)),
    }
}

/// [`preprocess_pdf`]'s work, here and now: what the sandbox's child runs.
pub(crate) fn preprocess_pdf_within_budget(bytes: &[u8]) -> Result<Option<Vec<u8>>, OcrError> {
    super::within_inflation_budget(bytes.len(), || preprocess_pdf_now(bytes))
}

fn preprocess_pdf_now(bytes: &[u8]) -> Result<Option<Vec<u8>>, OcrError> {
    {
        let mut document =
            Document::load_mem(bytes).map_err(|e| OcrError::BadPdf(e.to_string()))?;
        let mut improved = 0;
        for (n, object) in document.objects.values_mut().enumerate() {
            let Object::Stream(stream) = object else {
                continue;
            };
            crate::sandbox::progress(format_args!("object {}", n + 1));
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
            let gray = match decode(
                &stream.content,
                Some(ImageFormat::Jpeg),
                PDF_IMAGE_MAX_PIXELS,
            ) {
                Ok(gray) => gray,
                Err(e) => {
                    tracing::warn!(error.message = %e, "a page image could not be preprocessed; kept as it is");
                    continue;
                }
            };
            let enhanced = enhance(gray, MAX_IMAGE_SIDE);
            let mut jpeg = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
                .encode_image(&enhanced)
                .map_err(OcrError::BadImage)?;
            // The page draws the image at its size on the page whatever its pixels are.
            stream
                .dict
                .set("Width", Object::Integer(i64::from(enhanced.width())));
            stream
                .dict
                .set("Height", Object::Integer(i64::from(enhanced.height())));
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
    }
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

    #[test]
    fn textract_takes_an_image_within_its_limits_as_the_header_declares_them() {
        assert!(textract_takes_image(&png(&GrayImage::new(10_000, 8))));
        assert!(textract_takes_image(&png_header_only(10_000, 10_000)));
        assert!(!textract_takes_image(&png_header_only(10_001, 8)));
        assert!(!textract_takes_image(&png_header_only(8, 11_000)));
        // Over 10 MB, whatever its size in pixels.
        let mut big = png(&GrayImage::new(8, 8)).to_vec();
        big.resize(TEXTRACT_SYNC_MAX_BYTES + 1, 0);
        assert!(!textract_takes_image(&big));
        // An unreadable header is Textract's to judge.
        assert!(textract_takes_image(b"not an image"));
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
        let scaled = enhance(
            GrayImage::new(TEXTRACT_MAX_SIDE + 2_000, 60),
            TEXTRACT_MAX_SIDE,
        );
        assert_eq!(scaled.dimensions(), (TEXTRACT_MAX_SIDE, 50));
        let kept = enhance(GrayImage::new(TEXTRACT_MAX_SIDE, 60), TEXTRACT_MAX_SIDE);
        assert_eq!(kept.dimensions(), (TEXTRACT_MAX_SIDE, 60));
    }

    #[test]
    fn a_large_image_is_scaled_to_the_pixel_budget_before_it_is_enhanced() {
        // 9000 x 9000 is 81 Mpx; an f32 plane of it would be ~650 MB.
        let (w, h) = working_size(9_000, 9_000, TEXTRACT_MAX_SIDE);
        assert!(
            u64::from(w) * u64::from(h) <= ENHANCE_MAX_PIXELS,
            "{w} x {h}"
        );
        assert_eq!(w, h, "the aspect ratio is kept");
        assert!(w >= 3_990, "no smaller than it needs to be: {w}");
        let (w, h) = working_size(2_480, 3_508, TEXTRACT_MAX_SIDE); // A4 at 300 dpi
        assert_eq!((w, h), (2_480, 3_508), "a page at 300 dpi is kept as it is");

        // What the job asks of the memory budget is read from the header alone.
        let gray = decode_and_enhance_bytes(9_000, 9_000, ColorType::L8);
        let rgb = decode_and_enhance_bytes(9_000, 9_000, ColorType::Rgb8);
        assert_eq!(gray, 81_000_000 * 2 + ENHANCE_MAX_PIXELS * 4);
        assert_eq!(rgb, 81_000_000 * 4 + ENHANCE_MAX_PIXELS * 4);
    }

    #[test]
    fn the_header_tells_what_an_image_needs_without_decoding_it() {
        let header = png_header_only(11_000, 11_000); // 121 Mpx of gray, declared
        let needs = image_job_bytes(&header).unwrap();
        assert_eq!(
            needs,
            header.len() as u64 + 121_000_000 * 2 + ENHANCE_MAX_PIXELS * 4
        );
    }

    #[test]
    fn shrinking_averages_each_area_of_the_source() {
        let src = GrayImage::from_fn(4, 2, |x, _| image::Luma([if x < 2 { 0 } else { 200 }]));
        let out = shrink(&src, 2, 1);
        assert_eq!(out.as_raw(), &vec![0, 200]);
        let odd = shrink(&noise(1_001, 999), 333, 333);
        assert_eq!(odd.dimensions(), (333, 333));
    }

    #[test]
    fn the_byte_unsharp_mask_matches_the_image_crate_s() {
        // A document-like image: dark strokes on a light ground, with noise.
        let base = noise(120, 80);
        let img = GrayImage::from_fn(120, 80, |x, y| {
            let stroke = (x / 7 + y / 5) % 3 == 0;
            let n = i32::from(base.get_pixel(x, y).0[0]) / 16 - 8;
            image::Luma([((if stroke { 40 } else { 220 }) + n).clamp(0, 255) as u8])
        });
        let ours = unsharp(&img, 5);
        let theirs = image::imageops::unsharpen(&img, 1.0, 5);
        let differing = ours
            .as_raw()
            .iter()
            .zip(theirs.as_raw())
            .filter(|(a, b)| a.abs_diff(**b) > 12)
            .count();
        assert!(
            differing * 100 <= ours.as_raw().len(),
            "{differing} pixels differ by more than 12 levels"
        );
        assert_ne!(ours, img, "it sharpens");
    }
}
