//! Tests of the transcription's own rules: job budgets, file kinds, usable text and the
//! quality of a document.

use super::*;

#[tokio::test]
async fn a_cancelled_cpu_job_keeps_its_permit_until_the_job_really_ends() {
    // Arrange: one permit; a job that says it started and then waits for the gate.
    let pool = Arc::new(Semaphore::new(1));
    let memory = Arc::new(Semaphore::new(memory_budget_mib() as usize));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    let mut job = Box::pin(on_pool(
        &pool,
        (&memory, memory_budget_mib()),
        10 * MIB,
        move || {
            let _ = started_tx.send(());
            let _ = gate_rx.recv();
            let _ = ended_tx.send(());
        },
    ));
    let wait = std::time::Duration::from_secs(30);

    // Act: cancel the future once the job runs on the blocking pool.
    tokio::select! {
        _ = &mut job => panic!("the job cannot end before the gate opens"),
        started = tokio::time::timeout(wait, started_rx) => {
            started.expect("the job started").expect("the job signals its start");
        }
    }
    drop(job);

    // Assert: the job still runs, so its permit is still taken.
    assert_eq!(
        pool.available_permits(),
        0,
        "the permit of a job still running was released by the cancellation"
    );
    gate_tx.send(()).expect("the job waits for the gate");
    tokio::time::timeout(wait, ended_rx)
        .await
        .expect("the job ended")
        .expect("the job signals its end");
    let permit = tokio::time::timeout(wait, pool.acquire())
        .await
        .expect("the permit comes back once the job has ended");
    drop(permit);
    assert_eq!(
        memory.available_permits() as u64,
        memory_budget_mib(),
        "the job's memory came back too"
    );
}

#[tokio::test]
async fn jobs_wait_for_their_memory_and_one_larger_than_the_budget_is_refused() {
    // Arrange: two CPUs, a budget of 100 MiB; a 70 MiB job that waits at a gate.
    let cpu = Arc::new(Semaphore::new(2));
    let memory = Arc::new(Semaphore::new(100));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let wait = std::time::Duration::from_secs(30);
    let big = tokio::spawn({
        let (cpu, memory) = (Arc::clone(&cpu), Arc::clone(&memory));
        async move {
            on_pool(&cpu, (&memory, 100), 70 * MIB, move || {
                let _ = started_tx.send(());
                let _ = gate_rx.recv();
            })
            .await
        }
    });
    tokio::time::timeout(wait, started_rx)
        .await
        .expect("the big job started")
        .expect("it signals its start");

    // Act: a 40 MiB job while 70 MiB are held, with a CPU free.
    let (ran_tx, mut ran_rx) = tokio::sync::oneshot::channel::<()>();
    let second = tokio::spawn({
        let (cpu, memory) = (Arc::clone(&cpu), Arc::clone(&memory));
        async move { on_pool(&cpu, (&memory, 100), 40 * MIB, move || ran_tx.send(())).await }
    });

    // Assert: it waits for memory, not for a CPU, and runs once the first has ended.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        ran_rx.try_recv().is_err(),
        "ran beside a job holding 70 of 100 MiB"
    );
    assert_eq!(cpu.available_permits(), 1, "a CPU was free all along");
    gate_tx.send(()).expect("the big job waits");
    big.await.unwrap().unwrap();
    tokio::time::timeout(wait, second)
        .await
        .expect("the second job ran")
        .unwrap()
        .unwrap()
        .unwrap();

    // And a job larger than the whole budget is refused without running.
    let err = on_pool(&cpu, (&memory, 100), 101 * MIB, || ())
        .await
        .unwrap_err();
    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    assert!(!err.is_transient());
}

/// A PDF written byte by byte (objects `1 0 obj` … in order, with a correct xref):
/// for what lopdf's own writer would not write (nesting 100,000 deep).
fn raw_pdf(objects: &[Vec<u8>]) -> Bytes {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).into_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).into_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").into_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .into_bytes(),
    );
    out.into()
}

/// One empty page whose dictionary cites `object` (object 4), which the parser reads
/// with the rest of the file.
fn page_citing(object: Vec<u8>) -> Bytes {
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Extra 4 0 R >>".to_vec(),
        object,
    ])
}

/// One page with `content`, font `/F1` (Helvetica) and the form `/X1` (object 5),
/// whose own content is `form` and whose resources are the page's.
fn page_with_form(content: &[u8], form: &[u8]) -> Bytes {
    let resources = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> \
                     /XObject << /X1 5 0 R >> >>";
    let stream = |body: &[u8], dict: &str| {
        let mut s = format!("<< {dict} /Length {} >>\nstream\n", body.len()).into_bytes();
        s.extend(body);
        s.extend(b"\nendstream");
        s
    };
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
             /Resources {resources} >>"
        )
        .into_bytes(),
        stream(content, ""),
        stream(
            form,
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources {resources}"),
        ),
    ])
}

#[tokio::test]
async fn arrays_nested_a_hundred_thousand_deep_are_not_recursed_into() {
    let mut deep = vec![b'['; 100_000];
    deep.extend(vec![b']'; 100_000]);
    let pdf = page_citing(deep);

    // On the blocking pool's thread, as in the function: a stack overflow aborts the
    // whole test process.
    let read = text_layer(pdf).await;

    assert!(
        read.is_ok() || !read.as_ref().unwrap_err().is_transient(),
        "{read:?}"
    );
    // The nesting within the limit still reads.
    let mut nested = vec![b'['; 60];
    nested.extend(vec![b']'; 60]);
    let fine = page_citing(nested);
    assert_eq!(text_layer(fine).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_pdf_that_parses_into_more_objects_than_its_size_allows_is_refused() {
    // 4 MB of `0 `: two million numbers, about 240 MB of parsed objects from a file
    // whose estimate allows it about 16 MB of them.
    let mut zeros = b"[".to_vec();
    zeros.extend(b"0 ".repeat(2_000_000));
    zeros.push(b']');
    let pdf = page_citing(zeros);
    assert!(pdf_object_limit(pdf.len()) < 2_000_000);

    let err = text_layer(pdf.clone()).await.unwrap_err();

    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("objects"), "{err}");
    let err = preprocess::preprocess_pdf(pdf).await.unwrap_err();
    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
}

#[tokio::test]
async fn a_form_that_draws_itself_is_refused_not_recursed_into() {
    let pdf = page_with_form(b"/X1 Do", b"BT /F1 12 Tf 100 700 Td (Loop) Tj ET /X1 Do");

    let err = text_layer(pdf).await.unwrap_err();

    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("nested deeper than 12"), "{err}");
}

#[tokio::test]
async fn a_form_drawn_twenty_thousand_times_is_refused() {
    let content = b"/X1 Do ".repeat(20_000);
    let pdf = page_with_form(&content, b"BT /F1 12 Tf 100 700 Td (ABC) Tj ET");

    let err = text_layer(pdf).await.unwrap_err();

    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("form XObjects drawn"), "{err}");
    // A form drawn on a page (a letterhead, a stamp) reads as before.
    let pdf = page_with_form(b"/X1 Do", b"BT /F1 12 Tf 100 700 Td (ABC) Tj ET");
    let read = text_layer(pdf).await;
    assert!(
        read.as_ref().is_ok_and(|p| p[0].contains("ABC")),
        "{read:?}"
    );
}

#[tokio::test]
async fn a_glyph_a_billion_points_to_the_right_costs_a_bounded_line() {
    let pdf = page_with_form(
        b"BT /F1 12 Tf 60 700 Td (Left) Tj ET BT /F1 12 Tf 1000000000 700 Td (Far) Tj ET \
          BT /F1 12 Tf 1000000000 650 Td (Indented) Tj ET",
        b"",
    );

    let pages = text_layer(pdf).await.unwrap();

    let longest = pages[0].lines().map(str::len).max().unwrap();
    assert!(
        longest <= 2 * pdf_layout::MAX_SPACE_RUN + 20,
        "{longest} bytes in one line"
    );
    assert!(
        pages[0].contains("Left") && pages[0].contains("Far"),
        "{}",
        pages[0]
    );
}

/// A PDF of one page per content stream, each stored as `FlateDecode` of the given
/// bytes.
fn pdf_with_pages(contents: &[Vec<u8>]) -> Bytes {
    use lopdf::{Document, Object, Stream, dictionary};
    use std::io::Write;
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let mut kids = Vec::new();
    for content in contents {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(content).unwrap();
        let stream = Stream::new(
            dictionary! { "Filter" => "FlateDecode" },
            z.finish().unwrap(),
        );
        let content_id = doc.add_object(stream);
        let page = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        };
        kids.push(Object::Reference(doc.add_object(page)));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out.into()
}

#[tokio::test]
async fn a_flate_bomb_in_a_content_stream_is_refused_not_inflated() {
    // 24 MiB of blank content in ~24 kB: beyond the cap of one stream.
    let bomb = pdf_with_pages(&[vec![b' '; 24 * MIB as usize]]);
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());

    let err = text_layer(bomb).await.unwrap_err();

    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("inflate"), "{err}");
    assert!(!err.is_transient());
}

#[tokio::test]
async fn streams_under_the_cap_each_but_over_it_together_are_refused() {
    let page = vec![b' '; 7 * MIB as usize];
    let pages: Vec<Vec<u8>> = std::iter::repeat_n(page.clone(), 10).collect(); // 70 MiB
    let err = text_layer(pdf_with_pages(&pages)).await.unwrap_err();
    assert!(matches!(err, OcrError::TooLarge { .. }), "{err:?}");

    // While three such pages, within both caps, read as before (blank pages).
    let pages: Vec<Vec<u8>> = std::iter::repeat_n(page, 3).collect();
    let read = text_layer(pdf_with_pages(&pages)).await.unwrap();
    assert_eq!(read.len(), 3);
    assert!(read.iter().all(|p| p.trim().is_empty()));
}

#[tokio::test]
async fn a_large_page_image_costs_the_text_layer_nothing() {
    use lopdf::{Document, Object, Stream, dictionary};
    use std::io::Write;
    // A scanned page: 3000 x 3000 RGB in FlateDecode, 27 MB of pixels, over the cap
    // of one stream; pdf-extract would inflate it and parse it as content.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&vec![0u8; 3_000 * 3_000 * 3]).unwrap();
    let mut doc = Document::with_version("1.5");
    let image = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 3_000, "Height" => 3_000,
            "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "FlateDecode",
        },
        z.finish().unwrap(),
    ));
    let content = doc.add_object(Stream::new(
        dictionary! {},
        b"q 595 0 0 842 0 0 cm /Im1 Do Q".to_vec(),
    ));
    let pages_id = doc.new_object_id();
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        "Resources" => dictionary! { "XObject" => dictionary! { "Im1" => image } },
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![Object::Reference(page)], "Count" => 1,
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut pdf = Vec::new();
    doc.save_to(&mut pdf).unwrap();

    let pages = text_layer(pdf.into()).await.expect("read, not refused");

    assert_eq!(pages.len(), 1);
    assert!(!has_usable_text(&pages[0]), "a scan: OCR decides");
}

#[test]
fn the_budget_of_a_job_follows_the_file_and_the_caps() {
    let caps = PDF_INFLATE_PER_STREAM * 2 + 150_000 * 220 + 256 * 1024 * 100;
    // A small file: the file and the objects' floor (200,000 at 120 bytes).
    assert_eq!(
        text_layer_job_bytes(1_000_000),
        1_000_000 + 200_000 * 120 + caps
    );
    // A large one: the file and four times it in objects.
    assert_eq!(
        text_layer_job_bytes(12_000_000),
        12_000_000 + 400_000 * 120 + caps
    );
    assert!(
        text_layer_job_bytes(10_000_000) / MIB < memory_budget_mib(),
        "a 10 MB PDF fits the budget of a 1024 MB function"
    );
}

#[test]
fn file_kinds_come_from_the_extension() {
    assert_eq!(FileKind::from_path("documents/a.PDF"), Some(FileKind::Pdf));
    assert_eq!(
        FileKind::from_path("documents/a.jpeg"),
        Some(FileKind::Jpeg)
    );
    assert_eq!(FileKind::from_path("documents/a.docx"), None);
    assert_eq!(FileKind::from_path("documents/noext"), None);
}

#[tokio::test]
async fn plain_text_is_transcribed_with_full_quality() {
    let t = Transcriber::Native
        .transcribe(FileKind::Text, b"Rechnung Nr. 1")
        .await
        .unwrap();
    assert_eq!(t.text, "Rechnung Nr. 1");
    assert_eq!(t.quality, 1.0);
    assert_eq!(t.page_count, 1);
}

#[tokio::test]
async fn whitespace_only_text_has_zero_quality_and_empty_bytes_are_an_error() {
    let t = Transcriber::Native
        .transcribe(FileKind::Text, b"  \n ")
        .await
        .unwrap();
    assert_eq!(t.quality, 0.0);
    let err = Transcriber::Native
        .transcribe(FileKind::Text, b"")
        .await
        .unwrap_err();
    assert!(matches!(err, OcrError::Empty));
    assert!(!err.is_transient());
}

#[tokio::test]
async fn garbage_named_pdf_is_a_permanent_error() {
    let err = Transcriber::Native
        .transcribe(FileKind::Pdf, b"not a pdf at all")
        .await
        .unwrap_err();
    assert!(matches!(err, OcrError::BadPdf(_)), "{err:?}");
    assert!(!err.is_transient());
}

#[test]
fn a_stray_page_number_is_not_usable_text_but_a_line_of_an_invoice_is() {
    assert!(!has_usable_text("  2  \n"));
    assert!(!has_usable_text("Seite 1/2"));
    assert!(has_usable_text("Rechnung Nr. RE-2014-0815"));
}

#[test]
fn a_document_s_quality_is_the_mean_of_its_pages() {
    let t = Transcription::from_pages(
        "native+textract",
        vec![
            PageText {
                text: "a".into(),
                quality: 1.0,
            },
            PageText {
                text: "b".into(),
                quality: 0.5,
            },
        ],
    );
    assert_eq!(t.quality, 0.75);
    assert_eq!(t.page_count, 2);
    assert_eq!(t.text, "a\n\u{c}\nb");
}
