//! Tests of which payload a hybrid PDF is read from: the file the catalogue's `/AF`
//! associates, and a person looks when the PDF carries a second invoice that differs.
//! The hostile PDFs are incremental updates of a real Mustang sample.

use std::path::PathBuf;

use lopdf::{Document, IncrementalDocument, Object, Stream, StringFormat, dictionary};

use super::*;

/// The public corpora (see their README): `DOCFLOW_CORPORA`, else `../shared/corpora`
/// beside this checkout.
fn corpus(path: &str) -> PathBuf {
    std::env::var_os("DOCFLOW_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"))
        .join(path)
}

/// Mustang's `EN16931_Einfach.pdf`: `factur-x.xml` in `/AF` as `/Alternative`, invoice
/// 471102 of 529.87 EUR.
fn sample() -> Vec<u8> {
    std::fs::read(corpus("mustang-samples/EN16931_Einfach.pdf")).unwrap()
}

/// The sample's payload as it is embedded.
fn sample_xml() -> Vec<u8> {
    zugferd::extract(&sample(), &pdf_limits()).unwrap().xml
}

/// The sample's invoice with ten times the quantity of its 7 % line: every total
/// changed and still adding up (BR-CO-10, -13, -15, -16 and the VAT breakdown hold), so
/// nothing in the XML itself gives it away. 3178.12 EUR.
fn larger_total() -> Vec<u8> {
    let mut xml = String::from_utf8(sample_xml()).unwrap();
    for (from, to) in [
        (">50.0000<", ">500.0000<"),
        (">275.00<", ">2750.00<"),
        (">19.25<", ">192.50<"),
        (">473.00<", ">2948.00<"),
        (">56.87<", ">230.12<"),
        (">529.87<", ">3178.12<"),
    ] {
        assert!(xml.contains(from), "{from}");
        xml = xml.replace(from, to);
    }
    xml.into_bytes()
}

fn deflated(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// `pdf` with an incremental update appending `name` carrying `xml` as an
/// `/Alternative` file specification, added to the catalogue's `/AF` array when
/// `associated`, referred to from nowhere otherwise.
fn updated(pdf: &[u8], name: &str, xml: &[u8], associated: bool) -> Vec<u8> {
    let prev = Document::load_mem(pdf).unwrap();
    let catalog = prev.trailer.get(b"Root").unwrap().as_reference().unwrap();
    // `/AF` is an object of its own in the sample; inline, the catalogue is updated.
    let af = match prev.get_dictionary(catalog).unwrap().get(b"AF") {
        Ok(Object::Reference(id)) => Some(*id),
        _ => None,
    };
    let mut update = IncrementalDocument::create_from(pdf.to_vec(), prev);
    let text = || Object::String(name.as_bytes().to_vec(), StringFormat::Literal);
    let doc = &mut update.new_document;
    let file = doc.add_object(Stream::new(
        dictionary! { "Type" => "EmbeddedFile", "Subtype" => "text#2Fxml", "Filter" => "FlateDecode" },
        deflated(xml),
    ));
    let spec = doc.add_object(dictionary! {
        "Type" => "Filespec", "F" => text(), "UF" => text(),
        "AFRelationship" => "Alternative",
        "EF" => dictionary! { "F" => file, "UF" => file },
    });
    if associated {
        let holder = af.unwrap_or(catalog);
        update.opt_clone_object_to_new_document(holder).unwrap();
        let object = update.new_document.get_object_mut(holder).unwrap();
        let array = match object {
            Object::Array(array) => array,
            Object::Dictionary(catalog) => catalog.get_mut(b"AF").unwrap().as_array_mut().unwrap(),
            other => panic!("/AF in {other:?}"),
        };
        array.push(spec.into());
    }
    let mut out = Vec::new();
    update.save_to(&mut out).unwrap();
    out
}

fn source(e: &Extraction) -> &EInvoiceSource {
    e.einvoice.as_ref().unwrap()
}

fn payload_findings(e: &Extraction) -> Vec<&String> {
    source(e)
        .review
        .iter()
        .filter(|f| f.starts_with(PAYLOAD_FINDING))
        .collect()
}

#[test]
fn an_invoice_an_incremental_update_adds_outside_af_is_not_read_and_goes_to_review() {
    for name in ["factur-x.xml", "ZUGFeRD-invoice.xml"] {
        let pdf = updated(&sample(), name, &larger_total(), false);

        let e = read(&pdf).unwrap();

        assert_eq!(e.total, Some(529.87), "{name}");
        assert_eq!(source(&e).attachment.as_deref(), Some("factur-x.xml"));
        let review = payload_findings(&e);
        assert_eq!(review.len(), 1, "{name}: {:?}", source(&e).review);
        assert!(
            review[0].contains(&format!("{name:?}"))
                && review[0].contains("not in the document catalogue's /AF"),
            "{}",
            review[0]
        );
        assert!(e.needs_human_review(), "{name}");
        // The XML /AF names stays the reading, with the review: the page is not read
        // instead.
        let kept = hybrid(Ok(e)).unwrap();
        assert_eq!(kept.total, Some(529.87));
        assert_eq!(source(&kept).provider, "einvoice");
    }
}

#[test]
fn two_invoices_in_af_that_disagree_go_to_review_naming_both() {
    let pdf = updated(&sample(), "ZUGFeRD-invoice.xml", &larger_total(), true);

    let e = read(&pdf).unwrap();

    assert_eq!(e.total, Some(529.87));
    let review = payload_findings(&e);
    assert_eq!(review.len(), 1, "{:?}", source(&e).review);
    assert!(
        review[0].contains("two invoices that differ")
            && review[0].contains("\"factur-x.xml\" (object 23 0)")
            && review[0].contains("\"ZUGFeRD-invoice.xml\""),
        "{}",
        review[0]
    );
    assert!(e.needs_human_review());
    assert!(hybrid(Ok(e)).is_ok());
}

#[test]
fn the_unmodified_sample_is_read_without_review() {
    let e = read(&sample()).unwrap();

    assert_eq!(e.total, Some(529.87));
    assert_eq!(source(&e).review, Vec::<String>::new());
    assert!(
        !source(&e)
            .findings
            .iter()
            .any(|f| f.starts_with(PAYLOAD_FINDING))
    );
    assert!(hybrid(Ok(e)).is_ok());
}

#[test]
fn an_update_repeating_the_same_invoice_goes_to_no_review() {
    let pdf = updated(&sample(), "factur-x.xml", &sample_xml(), false);

    let e = read(&pdf).unwrap();

    assert_eq!(e.total, Some(529.87));
    assert_eq!(source(&e).review, Vec::<String>::new());
}

/// Mustang's `validV2PDF.pdf` carries a ZUGFeRD 1.0 `ZUGFeRD-invoice.xml` beside its
/// `factur-x.xml`, both in `/AF`: a copy for ZUGFeRD 1.0 readers, not a second invoice.
#[test]
fn a_zugferd_1_copy_beside_the_invoice_is_no_payload_finding() {
    let e = read(&std::fs::read(corpus("mustang-samples/validV2PDF.pdf")).unwrap()).unwrap();

    assert_eq!(source(&e).attachment.as_deref(), Some("factur-x.xml"));
    assert!(
        !source(&e)
            .findings
            .iter()
            .any(|f| f.starts_with(PAYLOAD_FINDING)),
        "{:?}",
        source(&e).findings
    );
}
