//! Whole documents, written as PDF text extraction and OCR print them, in the layouts
//! the extractor must handle. They were written before the rules were tuned.

use chrono::NaiveDate;

use super::extract;
use crate::extract::{Confidence, DocumentType, Extraction};

fn d(y: i32, m: u32, day: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, day)
}

fn extracted(text: &str) -> Extraction {
    let extraction = extract(text);
    assert!(extraction.validate().is_ok(), "{extraction:#?}");
    extraction
}

const GERMAN_GMBH_INVOICE: &str = "\
                                                    Müller Haustechnik GmbH
                                                    Industriestraße 12
                                                    80331 München
                                                    Tel. 089 123456-0

Müller Haustechnik GmbH · Industriestraße 12 · 80331 München
Bauträger Nord AG
Herrn Peter Schmidt
Bahnhofstraße 1
10115 Berlin


RECHNUNG

Rechnungsnummer:    RE-2014-0815                     Kundennummer:   K-10023
Rechnungsdatum:     07.05.2014                       Ihre Bestellung: 4500012345
Lieferdatum:        02.05.2014                       Lieferschein-Nr.: LS-7781

Sehr geehrter Herr Schmidt,
für die ausgeführten Arbeiten erlauben wir uns wie folgt zu berechnen:

Pos  Bezeichnung                      Menge       Einzelpreis       Gesamt
1    Wartung Gas-Brennwerttherme      3 Std            85,00 €     255,00 €
2    Dichtungssatz DN 20              4 Stk            12,50 €      50,00 €
3    Umwälzpumpe Wilo Yonos 25/6      1 Stk           389,00 €     389,00 €
4    Anfahrtspauschale                1                 45,00 €      45,00 €

                                              Summe netto           739,00 €
                                              zzgl. 19 % MwSt.      140,41 €
                                              Rechnungsbetrag       879,41 €

Zahlbar innerhalb von 14 Tagen ohne Abzug.

Müller Haustechnik GmbH | Geschäftsführer: Hans Müller | Amtsgericht München HRB 123456
USt-IdNr.: DE 123 456 789 | Stadtsparkasse München | IBAN: DE89 3704 0044 0532 0130 00 | BIC: SSKMDEMMXXX
";

#[test]
fn a_german_gmbh_invoice_with_items_and_19_percent_vat_is_read_completely() {
    let e = extracted(GERMAN_GMBH_INVOICE);

    assert_eq!(e.document_type, Some(DocumentType::Invoice));
    assert_eq!(e.invoice_number.as_deref(), Some("RE-2014-0815"));
    assert_eq!(e.invoice_date, d(2014, 5, 7));
    assert_eq!(e.due_date, d(2014, 5, 21));
    assert_eq!(e.supplier_name.as_deref(), Some("Müller Haustechnik GmbH"));
    assert_eq!(
        e.supplier_address.as_deref(),
        Some("Industriestraße 12, 80331 München")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Bauträger Nord AG"));
    assert_eq!(e.supplier_vat_id.as_deref(), Some("DE123456789"));
    assert_eq!(e.supplier_iban.as_deref(), Some("DE89370400440532013000"));
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(739.0), Some(140.41), Some(879.41))
    );
    assert_eq!(e.po_reference.as_deref(), Some("4500012345"));
    assert_eq!(e.delivery_note_reference.as_deref(), Some("LS-7781"));
    assert_eq!(e.line_items.len(), 4);
    assert_eq!(e.line_items[0].description, "Wartung Gas-Brennwerttherme");
    assert_eq!(e.line_items[0].quantity, Some(3.0));
    assert_eq!(e.line_items[2].unit_price, Some(389.0));
    assert_eq!(e.confidence, Confidence::High);
    assert!(e.missing_fields.is_empty(), "{:?}", e.missing_fields);
}

const DUTCH_BV_FACTUUR: &str = "\
Jansen Installatietechniek B.V.
Keizersgracht 123
1015 CJ Amsterdam
KvK 12345678   BTW-nummer NL8123.45.678.B01

Aan:
Bakkerij De Vries V.O.F.
Dorpsstraat 8
3811 AA Amersfoort

FACTUUR

Factuurnummer        2014-0417
Factuurdatum         19 april 2014
Vervaldatum          19 mei 2014
Uw referentie        PO-88812

Omschrijving                         Aantal     Prijs        Bedrag
Onderhoud koelcel                       2      € 150,00     € 300,00
Vervangen thermostaat                   1      €  87,50     €  87,50

Subtotaal                                                   € 387,50
BTW 21%                                                     €  81,38
Totaal incl. BTW                                            € 468,88

Wij verzoeken u het bedrag binnen 30 dagen over te maken op
IBAN NL91 ABNA 0417 1643 00 t.n.v. Jansen Installatietechniek B.V.
";

#[test]
fn a_dutch_bv_factuur_with_21_percent_btw_and_written_dates_is_read_completely() {
    let e = extracted(DUTCH_BV_FACTUUR);

    assert_eq!(e.document_type, Some(DocumentType::Invoice));
    assert_eq!(e.invoice_number.as_deref(), Some("2014-0417"));
    assert_eq!(e.invoice_date, d(2014, 4, 19));
    assert_eq!(e.due_date, d(2014, 5, 19));
    assert_eq!(
        e.supplier_name.as_deref(),
        Some("Jansen Installatietechniek B.V.")
    );
    assert_eq!(
        e.supplier_address.as_deref(),
        Some("Keizersgracht 123, 1015 CJ Amsterdam")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Bakkerij De Vries V.O.F."));
    assert_eq!(e.supplier_vat_id.as_deref(), Some("NL812345678B01"));
    assert_eq!(e.supplier_iban.as_deref(), Some("NL91ABNA0417164300"));
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(387.5), Some(81.38), Some(468.88))
    );
    assert_eq!(e.po_reference.as_deref(), Some("PO-88812"));
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[0].quantity, Some(2.0));
    assert_eq!(e.line_items[0].unit_price, Some(150.0));
    assert_eq!(e.confidence, Confidence::High);
}

const ENGLISH_LTD_INVOICE: &str = "\
INVOICE

Northwind Traders Ltd                         Invoice No.   INV-1043
14 Harbour Road                               Date:         07/05/2014
Bristol BS1 4DJ                               Payment due:  06/06/2014
United Kingdom                                Your order:   PO-5521

VAT Reg No: GB 123 4567 89

Bill to:
Contoso Ltd
1 Main Street
Leeds LS1 1AA

Description                          Qty      Unit price        Amount
Consulting services (days)             5       £850.00       £4,250.00
Travel expenses                        1       £234.56         £234.56

                                         Subtotal           £4,484.56
                                         VAT 20%              £896.91
                                         Total due          £5,381.47

Bank: Barclays   Sort code 20-00-00   IBAN GB29 NWBK 6016 1331 9268 19
";

#[test]
fn an_english_ltd_invoice_in_pounds_with_day_first_dates_is_read_completely() {
    let e = extracted(ENGLISH_LTD_INVOICE);

    assert_eq!(e.document_type, Some(DocumentType::Invoice));
    assert_eq!(e.invoice_number.as_deref(), Some("INV-1043"));
    assert_eq!(e.invoice_date, d(2014, 5, 7));
    assert_eq!(e.due_date, d(2014, 6, 6));
    assert_eq!(e.supplier_name.as_deref(), Some("Northwind Traders Ltd"));
    assert_eq!(e.customer_name.as_deref(), Some("Contoso Ltd"));
    assert_eq!(e.supplier_vat_id.as_deref(), Some("GB123456789"));
    assert_eq!(e.supplier_iban.as_deref(), Some("GB29NWBK60161331926819"));
    assert_eq!(e.currency.as_deref(), Some("GBP"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(4484.56), Some(896.91), Some(5381.47))
    );
    assert_eq!(e.po_reference.as_deref(), Some("PO-5521"));
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[0].amount, Some(4250.0));
    assert_eq!(e.confidence, Confidence::High);
}

const US_INC_INVOICE: &str = "\
Globex Inc.
1200 Market Street, Suite 400
San Francisco, CA 94103

INVOICE #GX-20877

Invoice Date: April 19, 2014
Due Date: 05/19/2014
P.O. Number: 7781-A

Sold To:
Initech LLC
500 Elm Ave
Austin, TX 78701

Item                       Quantity     Rate         Amount
Server rack installation      12       $125.00     $1,500.00
Cat6 cabling (per 100 ft)      3        $89.99       $269.97

Subtotal                                          $1,769.97
Sales Tax (8.5%)                                    $150.45
Total                                             $1,920.42

Thank you for your business!
";

#[test]
fn a_us_inc_invoice_in_dollars_with_month_first_dates_is_read_completely() {
    let e = extracted(US_INC_INVOICE);

    assert_eq!(e.document_type, Some(DocumentType::Invoice));
    assert_eq!(e.invoice_number.as_deref(), Some("GX-20877"));
    assert_eq!(e.invoice_date, d(2014, 4, 19));
    assert_eq!(e.due_date, d(2014, 5, 19));
    assert_eq!(e.supplier_name.as_deref(), Some("Globex Inc."));
    assert_eq!(
        e.supplier_address.as_deref(),
        Some("1200 Market Street, Suite 400, San Francisco, CA 94103")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Initech LLC"));
    assert_eq!(e.currency.as_deref(), Some("USD"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(1769.97), Some(150.45), Some(1920.42))
    );
    assert_eq!(e.po_reference.as_deref(), Some("7781-A"));
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[1].quantity, Some(3.0));
    assert_eq!(e.supplier_vat_id, None);
    assert_eq!(e.confidence, Confidence::High);
}

const GERMAN_GUTSCHRIFT: &str = "\
Büromarkt Schneider KG
Lindenallee 4 - 50667 Köln

An
Kanzlei Weber & Partner mbB
Ringstraße 77
53111 Bonn
                                                   Köln, 3. März 2014
GUTSCHRIFT

Gutschrift-Nr.: GS-2014-031
zu Rechnung Nr. RE-2014-0299 vom 12.02.2014

Wir schreiben Ihnen für die zurückgesandte Ware gut:

Pos.  Artikel                              Menge    E-Preis      Betrag
1     Toner HP 305A schwarz                  -2      64,90      -129,80
2     Kopierpapier A4 80g (Karton)           -1      29,90       -29,90

Nettobetrag                                                    -159,70 EUR
MwSt. 19 %                                                      -30,34 EUR
Gutschriftsbetrag                                              -190,04 EUR

Der Betrag wird mit Ihrer nächsten Rechnung verrechnet.
USt-IdNr. DE 811 222 333
";

#[test]
fn a_german_gutschrift_with_negative_amounts_is_a_credit_note() {
    let e = extracted(GERMAN_GUTSCHRIFT);

    assert_eq!(e.document_type, Some(DocumentType::CreditNote));
    assert_eq!(e.invoice_number.as_deref(), Some("GS-2014-031"));
    assert_eq!(e.invoice_date, d(2014, 3, 3));
    assert_eq!(e.supplier_name.as_deref(), Some("Büromarkt Schneider KG"));
    assert_eq!(
        e.supplier_address.as_deref(),
        Some("Lindenallee 4, 50667 Köln")
    );
    assert_eq!(e.supplier_vat_id.as_deref(), Some("DE811222333"));
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(159.7), Some(30.34), Some(190.04)),
        "printed with minus signs, kept as the sizes"
    );
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[0].amount, Some(129.8));
    let lines: f64 = e.line_items.iter().filter_map(|l| l.amount).sum();
    assert!(
        (lines - 159.7).abs() < 0.005,
        "the lines still add up: {lines}"
    );
    assert_eq!(e.confidence, Confidence::High);
}

const PURCHASE_ORDER: &str = "\
Stadtwerke Beispielstadt GmbH
Einkauf · Am Werk 1 · 34117 Kassel

Lieferant:
Elektro Kraus GmbH & Co. KG
Gewerbepark 9
34123 Kassel

BESTELLUNG

Bestellnummer:   4500098765
Bestelldatum:    2014-05-07
Liefertermin:    2014-05-21
Ihr Ansprechpartner: Frau Lenz

Pos   Artikel-Nr.   Bezeichnung                 Menge    Preis/Stk      Gesamt
10    NYM-3x1.5     Mantelleitung NYM-J 3x1,5   500 m         0,62      310,00
20    SCH-16A       Leitungsschutzschalter B16   20 Stk       4,85       97,00

Gesamt netto                                                             407,00
zzgl. 19% USt.                                                            77,33
Gesamtbetrag                                                              484,33 EUR

Bitte geben Sie auf allen Dokumenten unsere Bestellnummer an.
";

#[test]
fn a_purchase_order_names_the_vendor_as_supplier_and_its_number_as_po_reference() {
    let e = extracted(PURCHASE_ORDER);

    assert_eq!(e.document_type, Some(DocumentType::PurchaseOrder));
    assert_eq!(e.invoice_number.as_deref(), Some("4500098765"));
    assert_eq!(e.po_reference.as_deref(), Some("4500098765"));
    assert_eq!(e.invoice_date, d(2014, 5, 7));
    assert_eq!(
        e.supplier_name.as_deref(),
        Some("Elektro Kraus GmbH & Co. KG")
    );
    assert_eq!(
        e.customer_name.as_deref(),
        Some("Stadtwerke Beispielstadt GmbH")
    );
    assert_eq!(e.currency.as_deref(), Some("EUR"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(407.0), Some(77.33), Some(484.33))
    );
    assert_eq!(e.line_items.len(), 2);
    assert_eq!(e.line_items[0].quantity, Some(500.0));
    assert_eq!(e.line_items[0].unit_price, Some(0.62));
    assert!(e.passes_quality_gate());
}

const DELIVERY_NOTE: &str = "\
PAKBON

Groothandel Bouwmaat Noord B.V.            Pakbonnummer:   PB-55120
Industrieweg 40                            Leverdatum:     07-05-2014
9723 JR Groningen                          Uw ordernummer: INK-2014-332

Afleveradres:
Aannemersbedrijf Bos
Stationsweg 2
9401 KJ Assen

Artikel     Omschrijving                       Aantal   Eenheid
BM-1044     Gipsplaat 12,5 mm 260x60              40     st
BM-2210     Metal stud C50 300 cm                 24     st

Ontvangen in goede orde: ________________
";

#[test]
fn a_dutch_delivery_note_without_amounts_is_a_confident_delivery_note() {
    let e = extracted(DELIVERY_NOTE);

    assert_eq!(e.document_type, Some(DocumentType::DeliveryNote));
    assert_eq!(e.invoice_number.as_deref(), Some("PB-55120"));
    assert_eq!(e.delivery_note_reference.as_deref(), Some("PB-55120"));
    assert_eq!(e.po_reference.as_deref(), Some("INK-2014-332"));
    assert_eq!(e.invoice_date, d(2014, 5, 7));
    assert_eq!(
        e.supplier_name.as_deref(),
        Some("Groothandel Bouwmaat Noord B.V.")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Aannemersbedrijf Bos"));
    assert_eq!(e.total, None);
    assert_eq!(e.currency, None);
    assert!(e.missing_fields.contains(&"total".to_string()));
    assert!(e.missing_fields.contains(&"currency".to_string()));
    assert!(e.passes_quality_gate());
}

const OCR_RECEIPT: &str = "\
  BACKEREI HOFMANN
 Hauptstr 3  9O441 Nurnberg
K A S S E N B 0 N
 2 x Brezel        1,60
 1 x Kaffee gr     2,9O
 Sunme      4.50
 BAR        5,00
 RUCKGELD   0,5O
 07.05.14  08:13   Bon 4411
";

#[test]
fn a_messy_ocr_receipt_is_read_honestly_with_its_gaps_named() {
    let e = extracted(OCR_RECEIPT);

    assert!(e.extraction_successful);
    assert_ne!(e.confidence, Confidence::High);
    assert_eq!(e.invoice_date, d(2014, 5, 7));
    assert_eq!(e.supplier_name.as_deref(), Some("BACKEREI HOFMANN"));
    assert_eq!(e.supplier_address.as_deref(), Some("Hauptstr 3"));
    assert_eq!(e.vat_amount, None);
    assert_eq!(e.total, None);
    assert!(e.missing_fields.contains(&"total".to_string()));
    assert!(e.missing_fields.contains(&"document_type".to_string()));
}

const ENGLISH_CREDIT_NOTE_LABELS_ABOVE: &str = "\
Fabrikam Supplies Limited
Unit 7, Riverside Park
Manchester M1 2AB
VAT No. GB 987 6543 21

CREDIT NOTE

Credit Note Number      Date              Original Invoice
CN-00042                19 Apr 2014       INV-9931

Customer
Tailspin Toys plc

Reason: damaged goods returned

Net amount
£-200.00
VAT
£-40.00
Total
£-240.00
";

#[test]
fn an_english_credit_note_with_values_under_their_labels_is_read() {
    let e = extracted(ENGLISH_CREDIT_NOTE_LABELS_ABOVE);

    assert_eq!(e.document_type, Some(DocumentType::CreditNote));
    assert_eq!(e.invoice_number.as_deref(), Some("CN-00042"));
    assert_eq!(e.invoice_date, d(2014, 4, 19));
    assert_eq!(
        e.supplier_name.as_deref(),
        Some("Fabrikam Supplies Limited")
    );
    assert_eq!(e.customer_name.as_deref(), Some("Tailspin Toys plc"));
    assert_eq!(e.supplier_vat_id.as_deref(), Some("GB987654321"));
    assert_eq!(e.currency.as_deref(), Some("GBP"));
    assert_eq!(
        (e.subtotal, e.vat_amount, e.total),
        (Some(200.0), Some(40.0), Some(240.0))
    );
    assert_eq!(e.confidence, Confidence::High);
}
