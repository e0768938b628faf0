//! The demo's sample documents (`cli/samples/`): written here as the lines of their
//! pages, generated into text PDFs and text files, and checked against what the offline
//! `rules` extractor must read from them — the demo's clusters and exports depend on it.
//!
//! After changing a document: `DOCFLOW_WRITE_SAMPLES=1 cargo test -p docflow-cli --test it samples::`
//! writes the files again; `the_committed_samples_are_what_this_file_generates` keeps
//! them from drifting.

use docflow::extract::{DocumentType, Extractor, einvoice};
use docflow::ocr::{FileKind, Transcriber};
use docflow_cli::samples::{SAMPLES, Sample};
use docflow_tests::pdf::text_pdf;

const MUELLER_PO: &[&str] = &[
    "Demo Bau GmbH · Friedrichstraße 100 · 10117 Berlin",
    "",
    "Müller Haustechnik GmbH",
    "Industriestraße 12",
    "80331 München",
    "",
    "BESTELLUNG",
    "",
    "Bestellnummer:\tBE-2026-0142",
    "Bestelldatum:\t03.11.2026",
    "Liefertermin:\t10.11.2026",
    "",
    "Pos\tBezeichnung\tMenge\tEinzelpreis\tGesamt",
    "1\tUmwälzpumpe Wilo Yonos 25/6\t2 Stk\t389,00 €\t778,00 €",
    "2\tDichtungssatz DN 20\t10 Stk\t12,50 €\t125,00 €",
    "3\tMontage Heizkreisverteiler\t3 Std\t85,00 €\t255,00 €",
    "",
    "\t\t\tSumme netto\t1.158,00 €",
    "\t\t\tzzgl. 19 % MwSt.\t220,02 €",
    "\t\t\tGesamtbetrag\t1.378,02 €",
    "",
    "Bitte liefern Sie an: Baustelle Gartenstraße 7, 10115 Berlin",
];

const MUELLER_DN: &[&str] = &[
    "Müller Haustechnik GmbH",
    "Industriestraße 12",
    "80331 München",
    "",
    "Demo Bau GmbH",
    "Friedrichstraße 100",
    "10117 Berlin",
    "",
    "LIEFERSCHEIN",
    "",
    "Lieferschein-Nr.:\tLS-2026-0311",
    "Lieferdatum:\t10.11.2026",
    "Ihre Bestellung:\tBE-2026-0142",
    "",
    "Pos\tBezeichnung\tMenge",
    "1\tUmwälzpumpe Wilo Yonos 25/6\t2 Stk",
    "2\tDichtungssatz DN 20\t10 Stk",
    "",
    "Ware vollständig und unbeschädigt erhalten: ____________________",
    "",
    "Müller Haustechnik GmbH | USt-IdNr.: DE 123 456 789",
];

const MUELLER_INVOICE: &[&str] = &[
    "Müller Haustechnik GmbH",
    "Industriestraße 12",
    "80331 München",
    "",
    "Müller Haustechnik GmbH · Industriestraße 12 · 80331 München",
    "Demo Bau GmbH",
    "Friedrichstraße 100",
    "10117 Berlin",
    "",
    "RECHNUNG",
    "",
    "Rechnungsnummer:\tRE-2026-0815",
    "Rechnungsdatum:\t12.11.2026",
    "Ihre Bestellung:\tBE-2026-0142",
    "Lieferschein-Nr.:\tLS-2026-0311",
    "",
    "Pos\tBezeichnung\tMenge\tEinzelpreis\tGesamt",
    "1\tUmwälzpumpe Wilo Yonos 25/6\t2 Stk\t389,00 €\t778,00 €",
    "2\tDichtungssatz DN 20\t10 Stk\t12,50 €\t125,00 €",
    "3\tMontage Heizkreisverteiler\t3 Std\t85,00 €\t255,00 €",
    "",
    "\t\t\tSumme netto\t1.158,00 €",
    "\t\t\tzzgl. 19 % MwSt.\t220,02 €",
    "\t\t\tRechnungsbetrag\t1.378,02 €",
    "",
    "Zahlbar innerhalb von 14 Tagen ohne Abzug.",
    "",
    "USt-IdNr.: DE 123 456 789 | Stadtsparkasse München | IBAN: DE89 3704 0044 0532 0130 00",
];

const JANSEN_PO: &str = "\
Demo Bau GmbH
Friedrichstraße 100
10117 Berlin

Aan:
Jansen Installatietechniek B.V.
Keizersgracht 123
1015 CJ Amsterdam

INKOOPORDER

Inkoopordernummer    PO-88812
Besteldatum          02-11-2026

Omschrijving                         Aantal     Prijs          Bedrag
Onderhoud koelcel                       2      € 450,00       € 900,00
Vervangen compressor                    1      € 334,50       € 334,50

Subtotaal                                                   € 1.234,50
BTW 21%                                                     €   259,25
Totaal                                                      € 1.493,75
";

const JANSEN_INVOICE: &[&str] = &[
    "Jansen Installatietechniek B.V.",
    "Keizersgracht 123",
    "1015 CJ Amsterdam",
    "KvK 12345678   BTW-nummer NL8123.45.678.B01",
    "",
    "Aan:",
    "Demo Bau GmbH",
    "Friedrichstraße 100",
    "10117 Berlin",
    "",
    "FACTUUR",
    "",
    "Factuurnummer\t2026-0417",
    "Factuurdatum\t16 november 2026",
    "Vervaldatum\t16 december 2026",
    "Uw referentie\tPO-88812",
    "",
    "Omschrijving\tAantal\tPrijs\tBedrag",
    "Onderhoud koelcel\t2\t€ 450,00\t€ 900,00",
    "Vervangen compressor\t1\t€ 334,50\t€ 334,50",
    "",
    "Subtotaal\t\t\t€ 1.234,50",
    "BTW 21%\t\t\t€ 259,25",
    "Totaal incl. BTW\t\t\t€ 1.493,75",
    "",
    "Wij verzoeken u het bedrag binnen 30 dagen over te maken op",
    "IBAN NL91 ABNA 0417 1643 00 t.n.v. Jansen Installatietechniek B.V.",
];

const NORTHWIND_DN: &[&str] = &[
    "DELIVERY NOTE",
    "",
    "Northwind Traders Ltd\tDelivery note No.\tDN-7781",
    "14 Harbour Road\tDelivery date:\t05/11/2026",
    "Bristol BS1 4DJ\tYour order:\tPO-5521",
    "United Kingdom",
    "",
    "VAT Reg No: GB 123 4567 89",
    "",
    "Deliver to:",
    "Demo Bau GmbH",
    "Friedrichstraße 100",
    "10117 Berlin",
    "",
    "Description\tQty",
    "Consulting services (days)\t5",
    "Site survey report\t1",
];

const NORTHWIND_INVOICE: &[&str] = &[
    "INVOICE",
    "",
    "Northwind Traders Ltd\tInvoice No.\tINV-1043",
    "14 Harbour Road\tDate:\t07/11/2026",
    "Bristol BS1 4DJ\tPayment due:\t07/12/2026",
    "United Kingdom\tYour order:\tPO-5521",
    "\tDelivery note No.\tDN-7781",
    "",
    "VAT Reg No: GB 123 4567 89",
    "",
    "Bill to:",
    "Demo Bau GmbH",
    "Friedrichstraße 100",
    "10117 Berlin",
    "",
    "Description\tQty\tUnit price\tAmount",
    "Consulting services (days)\t5\t£850.00\t£4,250.00",
    "Site survey report\t1\t£234.56\t£234.56",
    "",
    "\t\tSubtotal\t£4,484.56",
    "\t\tVAT 20%\t£896.91",
    "\t\tTotal due\t£5,381.47",
    "",
    "Bank: Barclays   Sort code 20-00-00   IBAN GB29 NWBK 6016 1331 9268 19",
];

const GLOBEX_INVOICE: &[&str] = &[
    "Globex Inc.",
    "1200 Market Street, Suite 400",
    "San Francisco, CA 94103",
    "",
    "INVOICE",
    "",
    "Invoice Number:\tGX-2026-0077",
    "Invoice Date:\t11/20/2026",
    "Due Date:\t12/20/2026",
    "",
    "Bill To:",
    "Demo Bau GmbH",
    "Friedrichstraße 100, 10117 Berlin, Germany",
    "",
    "Description\tQty\tUnit Price\tAmount",
    "Annual software license\t1\t$1,950.00\t$1,950.00",
    "Support hours\t2\t$100.00\t$200.00",
    "",
    "\t\tSubtotal\t$2,150.00",
    "\t\tTax\t$0.00",
    "\t\tTotal\t$2,150.00",
];

/// A PDF cut off in the middle of its first object: what a broken upload looks like.
const BROKEN_PDF: &[u8] = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\n";

fn generate(sample: &Sample) -> Vec<u8> {
    match sample.file_name {
        "mueller-bestellung-BE-2026-0142.pdf" => text_pdf(&[MUELLER_PO]),
        "mueller-lieferschein-LS-2026-0311.pdf" => text_pdf(&[MUELLER_DN]),
        "mueller-rechnung-RE-2026-0815.pdf" => text_pdf(&[MUELLER_INVOICE]),
        "jansen-inkooporder-PO-88812.txt" => JANSEN_PO.as_bytes().to_vec(),
        "jansen-factuur-2026-0417.pdf" => text_pdf(&[JANSEN_INVOICE]),
        "northwind-delivery-note-DN-7781.pdf" => text_pdf(&[NORTHWIND_DN]),
        "northwind-invoice-INV-1043.pdf" => text_pdf(&[NORTHWIND_INVOICE]),
        "globex-invoice-GX-2026-0077.pdf" => text_pdf(&[GLOBEX_INVOICE]),
        "scan-broken.pdf" => BROKEN_PDF.to_vec(),
        "meier-bestellung-BE-2026-0190.pdf" => text_pdf(&[MEIER_PO]),
        "meier-xrechnung-RE-2026-1207.xml" => meier_xrechnung(),
        "lieferant-bestellung-2018-471331.pdf" => text_pdf(&[LIEFERANT_PO]),
        "lieferant-zugferd-teilrechnung-471102.pdf" => {
            include_bytes!("../../../tests/fixtures/einvoice/zugferd-EN16931_1_Teilrechnung.pdf")
                .to_vec()
        }
        other => panic!("no generator for sample {other}"),
    }
}

const MEIER_PO: &[&str] = &[
    "Demo Bau GmbH · Friedrichstraße 100 · 10117 Berlin",
    "",
    "Meier Sanitär GmbH",
    "Am Kanal 5",
    "12345 Musterstadt",
    "",
    "BESTELLUNG",
    "",
    "Bestellnummer:\tBE-2026-0190",
    "Bestelldatum:\t17.11.2026",
    "",
    "Pos\tBezeichnung\tMenge\tEinzelpreis\tGesamt",
    "1\tZeitschrift Haustechnik, Jahresabonnement\t1 Stk\t288,79 €\t288,79 €",
    "2\tPorto + Versandkosten\t1 Stk\t26,07 €\t26,07 €",
    "",
    "\t\t\tSumme netto\t314,86 €",
    "\t\t\tzzgl. 7 % MwSt.\t22,04 €",
    "\t\t\tGesamtbetrag\t336,90 €",
];

const LIEFERANT_PO: &[&str] = &[
    "Demo Bau GmbH · Friedrichstraße 100 · 10117 Berlin",
    "",
    "Lieferant GmbH",
    "Lieferantenstraße 20",
    "80333 München",
    "",
    "BESTELLUNG",
    "",
    "Bestellnummer:\t2018-471331",
    "Bestelldatum:\t01.06.2018",
    "",
    "Pos\tBezeichnung\tMenge\tEinzelpreis\tGesamt",
    "1\tKunstrasen grün 3m breit\t3 Stk\t3,33 €\t10,00 €",
    "2\tSchweinesteak\t1 Stk\t5,50 €\t5,50 €",
    "3\tMineralwasser Medium 12 x 1,0l PET\t20 Stk\t5,49 €\t109,80 €",
    "4\tPfand\t20 Stk\t2,77 €\t55,46 €",
    "",
    "\t\t\tSumme netto\t177,49 €",
    "\t\t\tzzgl. MwSt.\t20,16 €",
    "\t\t\tGesamtbetrag\t197,65 €",
];

/// The demo's XRechnung: the KoSIT suite's first business case
/// (tests/fixtures/einvoice/, Apache-2.0) with Meier's name, number, date and the order
/// it answers. Nothing the business rules check is touched: the totals stay valid.
fn meier_xrechnung() -> Vec<u8> {
    let xml = include_str!("../../../tests/fixtures/einvoice/xrechnung-01.01a-INVOICE_ubl.xml");
    let replaced = [
        ("<cbc:ID>123456XX</cbc:ID>", "<cbc:ID>RE-2026-1207</cbc:ID>"),
        (
            "<cbc:IssueDate>2016-04-04</cbc:IssueDate>",
            "<cbc:IssueDate>2026-11-20</cbc:IssueDate>",
        ),
        ("[Seller name]", "Meier Sanitär GmbH"),
        ("[Seller trading name]", "Meier Sanitär"),
        (
            "</cbc:BuyerReference>",
            "</cbc:BuyerReference>\n    <cac:OrderReference>\n        <cbc:ID>BE-2026-0190</cbc:ID>\n    </cac:OrderReference>",
        ),
    ]
    .iter()
    .fold(xml.to_owned(), |xml, (from, to)| {
        assert!(xml.contains(from), "{from}");
        xml.replacen(from, to, 1)
    });
    replaced.into_bytes()
}

/// With `DOCFLOW_WRITE_SAMPLES=1` it writes the samples instead (run it after changing
/// a generator): `DOCFLOW_WRITE_SAMPLES=1 cargo test -p docflow-cli --test it samples::`.
#[test]
fn the_committed_samples_are_what_this_file_generates() {
    if std::env::var("DOCFLOW_WRITE_SAMPLES").is_ok_and(|v| v == "1") {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        std::fs::create_dir_all(&dir).unwrap();
        for sample in SAMPLES {
            std::fs::write(dir.join(sample.file_name), generate(sample)).unwrap();
        }
        return;
    }
    for sample in SAMPLES {
        assert!(
            sample.bytes == generate(sample).as_slice(),
            "{} differs from its generator; run `DOCFLOW_WRITE_SAMPLES=1 cargo test -p docflow-cli --test it samples::`",
            sample.file_name
        );
    }
}

#[tokio::test]
async fn the_rules_extractor_reads_every_sample_as_the_demo_expects() {
    for sample in SAMPLES {
        // A structured e-invoice is read from its XML, as ingestion reads it.
        if let Ok(e) = einvoice::read(sample.bytes) {
            let expected = sample
                .expected
                .as_ref()
                .expect("e-invoice samples are readable");
            let name = sample.file_name;
            assert_eq!(e.document_type, Some(expected.document_type), "{name}");
            assert_eq!(e.invoice_number.as_deref(), Some(expected.number), "{name}");
            assert_eq!(
                e.supplier_name.as_deref(),
                Some(expected.supplier),
                "{name}"
            );
            assert_eq!(e.total, expected.total, "{name}");
            assert_eq!(e.po_reference.as_deref(), expected.po_reference, "{name}");
            assert_eq!(e.einvoice.unwrap().provider, "einvoice");
            continue;
        }
        let kind = FileKind::from_path(sample.file_name).unwrap();
        let Some(expected) = &sample.expected else {
            let transcribed = Transcriber::Native.transcribe(kind, sample.bytes).await;
            assert!(
                transcribed.is_err(),
                "{} should not be readable",
                sample.file_name
            );
            continue;
        };
        let text = Transcriber::Native
            .transcribe(kind, sample.bytes)
            .await
            .unwrap()
            .text;
        let e = Extractor::Rules.extract(&text).await.unwrap().extraction;
        let name = sample.file_name;
        assert_eq!(
            e.document_type,
            Some(expected.document_type),
            "{name}: {e:#?}\n{text}"
        );
        assert_eq!(
            e.invoice_number.as_deref(),
            Some(expected.number),
            "{name}: {e:#?}"
        );
        assert_eq!(
            e.supplier_name.as_deref(),
            Some(expected.supplier),
            "{name}: {e:#?}"
        );
        assert_eq!(e.total, expected.total, "{name}: {e:#?}");
        assert!(e.passes_quality_gate(), "{name}: {e:#?}");
        if expected.document_type != DocumentType::PurchaseOrder {
            assert_eq!(
                e.po_reference.as_deref(),
                expected.po_reference,
                "{name}: {e:#?}"
            );
        }
    }
}
