//! ZUGFeRD 1.0 (`rsm:CrossIndustryDocument` in `urn:ferd:CrossIndustryDocument:invoice:1p0`),
//! issued from 2014 to 2019 and still found in suppliers' archives and re-sent invoices,
//! read into the same extraction contract as an EN 16931 invoice.
//!
//! It predates EN 16931: the `en16931` crates refuse it, and no schematron or rule set
//! exists for it. This reader takes the contract's terms from the BASIC, COMFORT and
//! EXTENDED profiles (the same elements in all three; BASIC has fewer of them and its
//! lines are optional), checks the arithmetic of the totals it can, and recommends
//! `undefined` whatever the profile: a ZUGFeRD 1.0 XML is not an EN 16931 invoice, so its
//! page is the legal one and an XML without a page to check it against goes to a person
//! ([`super::is_partial_profile`], [`super::unchecked_partial_profile`]).
//!
//! | the XML | what happens |
//! |---|---|
//! | a `CrossIndustryDocument` in another namespace | [`EInvoiceError::NotAnInvoice`] (a hybrid's page is read) |
//! | not UTF-8, not well-formed, a DTD, nested deeper than [`MAX_DEPTH`] | [`EInvoiceError::Unreadable`] |
//! | a profile ID other than BASIC, COMFORT or EXTENDED | read; the profile says so, a note among the findings |
//! | no number, issue date, seller name or `GrandTotalAmount` | read, the term absent (never `0.00`); a review finding |
//! | totals that do not add up | read; a review finding for each sum |
//! | an IBAN failing its check digits | not the supplier's IBAN; a finding |
//! | a value the contract refuses (a lower-case currency) | [`EInvoiceError::Invalid`] |
//!
//! Bounded as the EN 16931 path is: the payload is size- and node-checked before it gets
//! here (`bounded`), roxmltree refuses any DTD and parses without recursion, and the
//! tree's depth is checked before it is walked.

use chrono::NaiveDate;
use en16931_formats::MAX_DEPTH;
use roxmltree::{Document, Node};

use super::{
    EInvoiceError, EInvoiceSource, capped, compact, document_type, judge, root_name, supplier_iban,
    unit_price,
};
use crate::extract::{Confidence, Extraction, LineItem};

const RSM: &str = "urn:ferd:CrossIndustryDocument:invoice:1p0";
const RAM: &str =
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:12";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:15";

/// `einvoice.syntax` of a ZUGFeRD 1.0 reading.
pub const SYNTAX: &str = "ZUGFeRD 1.0 (CrossIndustryDocument)";

/// The note every ZUGFeRD 1.0 reading carries among its findings.
pub const NO_RULES: &str = "note: ZUGFeRD 1.0 predates EN 16931 and has no schematron or business rules; only the arithmetic of its totals was checked";

/// Whether the document element is named `CrossIndustryDocument` (any prefix): ZUGFeRD
/// 1.0's root. [`read`] checks its namespace.
pub fn is_root(xml: &[u8]) -> bool {
    let name = root_name(xml);
    name == "CrossIndustryDocument" || name.ends_with(":CrossIndustryDocument")
}

/// The profiles of ZUGFeRD 1.0, as `GuidelineSpecifiedDocumentContextParameter/ID`
/// names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Profile {
    Basic,
    Comfort,
    Extended,
}

impl Profile {
    /// `urn:ferd:CrossIndustryDocument:invoice:1p0:basic|comfort|extended`, and the
    /// `urn:ferd:invoice:1.0:…` spelling early generators wrote; case-insensitive.
    fn parse(id: &str) -> Option<Profile> {
        let (prefix, name) = id.trim().rsplit_once(':')?;
        if ![
            "urn:ferd:CrossIndustryDocument:invoice:1p0",
            "urn:ferd:invoice:1.0",
        ]
        .iter()
        .any(|p| p.eq_ignore_ascii_case(prefix))
        {
            return None;
        }
        match name.to_ascii_lowercase().as_str() {
            "basic" => Some(Profile::Basic),
            "comfort" => Some(Profile::Comfort),
            "extended" => Some(Profile::Extended),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Profile::Basic => "ZUGFeRD 1.0 BASIC",
            Profile::Comfort => "ZUGFeRD 1.0 COMFORT",
            Profile::Extended => "ZUGFeRD 1.0 EXTENDED",
        }
    }
}

/// Reads a ZUGFeRD 1.0 payload (already bounded) into the contract. `attachment` is the
/// hybrid's file name, `container` the PDF's divergences as findings, each marked whether
/// a person must look (two invoices that differ: review). Fails as the table
/// in the module's documentation says; never panics.
pub fn read(
    xml: &[u8],
    attachment: Option<String>,
    container: Vec<(bool, String)>,
) -> Result<Extraction, EInvoiceError> {
    let text = std::str::from_utf8(xml.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(xml))
        .map_err(|_| EInvoiceError::Unreadable("the ZUGFeRD 1.0 XML is not UTF-8".into()))?;
    let doc = Document::parse(text).map_err(|e| EInvoiceError::Unreadable(e.to_string()))?;
    let depth = depth(&doc);
    if depth > MAX_DEPTH {
        return Err(EInvoiceError::Unreadable(format!(
            "the XML nests {depth} elements deep, over the limit of {MAX_DEPTH}"
        )));
    }
    let root = doc.root_element();
    if !root.has_tag_name((RSM, "CrossIndustryDocument")) {
        return Err(EInvoiceError::NotAnInvoice(format!(
            "a CrossIndustryDocument in the namespace {:?}, not ZUGFeRD 1.0's {RSM:?}",
            root.tag_name().namespace().unwrap_or("")
        )));
    }
    let extraction = Reading::of(root).into_extraction(attachment, container);
    // What the XML admits and the contract does not (a lower-case currency code, say).
    extraction.validate().map_err(|e| EInvoiceError::Invalid {
        findings: vec![format!("contract: {e}")],
    })?;
    Ok(extraction)
}

/// The deepest element nesting of a parsed tree, in one pass in document order (a
/// parent before its children) without recursion.
fn depth(doc: &Document<'_>) -> usize {
    let mut depths = vec![0usize; doc.descendants().len()];
    let mut max = 0;
    for n in doc.descendants() {
        let parent = n.parent().map_or(0, |p| depths[p.id().get_usize()]);
        let depth = parent + usize::from(n.is_element());
        depths[n.id().get_usize()] = depth;
        max = max.max(depth);
    }
    max
}

/// The header totals (`SpecifiedTradeSettlementMonetarySummation`) and the VAT
/// breakdown's sum; `None` where the XML has no such element.
#[derive(Debug, Default)]
struct Totals {
    line: Option<f64>,
    basis: Option<f64>,
    tax: Option<f64>,
    grand: Option<f64>,
    prepaid: Option<f64>,
    due: Option<f64>,
    /// Σ `ApplicableTradeTax/CalculatedAmount` of the header, when there is one.
    tax_breakdown: Option<f64>,
}

/// What the XML says, before it is mapped onto the contract.
struct Reading {
    specification_id: Option<String>,
    profile: Option<Profile>,
    number: Option<String>,
    type_code: Option<String>,
    issue_date: Option<NaiveDate>,
    due_date: Option<NaiveDate>,
    seller_name: Option<String>,
    seller_address: Option<String>,
    seller_vat_id: Option<String>,
    buyer_name: Option<String>,
    buyer_reference: Option<String>,
    order_reference: Option<String>,
    delivery_note_reference: Option<String>,
    currency: Option<String>,
    accounts: Vec<String>,
    totals: Totals,
    lines: Vec<LineItem>,
}

impl Reading {
    fn of(root: Node<'_, '_>) -> Reading {
        let context = child(Some(root), RSM, "SpecifiedExchangedDocumentContext");
        let header = child(Some(root), RSM, "HeaderExchangedDocument");
        let transaction = child(Some(root), RSM, "SpecifiedSupplyChainTradeTransaction");
        let agreement = at(transaction, &["ApplicableSupplyChainTradeAgreement"]);
        let settlement = at(transaction, &["ApplicableSupplyChainTradeSettlement"]);
        let seller = at(agreement, &["SellerTradeParty"]);
        let specification_id = text(at(
            context,
            &["GuidelineSpecifiedDocumentContextParameter", "ID"],
        ));
        let currency = text(at(settlement, &["InvoiceCurrencyCode"]));
        Reading {
            profile: specification_id.as_deref().and_then(Profile::parse),
            specification_id,
            number: text(at(header, &["ID"])),
            type_code: text(at(header, &["TypeCode"])),
            issue_date: date(at(header, &["IssueDateTime"])),
            due_date: settlement.and_then(|s| {
                rams(s, "SpecifiedTradePaymentTerms")
                    .find_map(|terms| date(at(Some(terms), &["DueDateDateTime"])))
            }),
            seller_name: text(at(seller, &["Name"])),
            seller_address: address(at(seller, &["PostalTradeAddress"])),
            seller_vat_id: seller.and_then(|s| {
                rams(s, "SpecifiedTaxRegistration")
                    .filter_map(|r| at(Some(r), &["ID"]))
                    .filter(|id| id.attribute("schemeID").map(str::trim) == Some("VA"))
                    .find_map(|id| text(Some(id)))
                    .map(|id| compact(&id))
            }),
            buyer_name: text(at(agreement, &["BuyerTradeParty", "Name"])),
            buyer_reference: text(at(agreement, &["BuyerReference"])),
            order_reference: text(at(agreement, &["BuyerOrderReferencedDocument", "ID"])),
            delivery_note_reference: text(at(
                transaction,
                &[
                    "ApplicableSupplyChainTradeDelivery",
                    "DeliveryNoteReferencedDocument",
                    "ID",
                ],
            )),
            accounts: settlement.map(transfer_accounts).unwrap_or_default(),
            totals: totals(settlement, currency.as_deref()),
            currency,
            lines: transaction
                .map(|t| {
                    rams(t, "IncludedSupplyChainTradeLineItem")
                        .filter_map(line)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn into_extraction(
        self,
        attachment: Option<String>,
        container: Vec<(bool, String)>,
    ) -> Extraction {
        let mut findings: Vec<String> = container.iter().map(|(_, f)| f.clone()).collect();
        findings.push(NO_RULES.to_owned());
        let profile = match self.profile {
            Some(p) => p.name().to_owned(),
            None => {
                let declared = self
                    .specification_id
                    .as_deref()
                    .map_or_else(|| "absent".to_owned(), |id| format!("{id:?}"));
                findings.push(format!(
                    "note: the profile ID (GuidelineSpecifiedDocumentContextParameter) is {declared}, not ZUGFeRD 1.0's BASIC, COMFORT or EXTENDED; read as one of them"
                ));
                "ZUGFeRD 1.0, profile unknown".to_owned()
            }
        };
        let mut review = self.incomplete();
        review.extend(arithmetic(&self.totals, &self.lines));
        findings.extend(review.iter().cloned());
        review.extend(
            container
                .into_iter()
                .filter(|(fatal, _)| *fatal)
                .map(|(_, f)| f),
        );
        let iban = supplier_iban(
            self.accounts.iter().map(String::as_str),
            "IBANID",
            &mut findings,
        );
        let t = &self.totals;
        let mut e = Extraction {
            schema_version: crate::extract::SCHEMA_VERSION,
            extraction_successful: true,
            confidence: Confidence::High,
            missing_fields: Vec::new(),
            document_type: Some(document_type(self.type_code.as_deref(), false, t.grand)),
            invoice_number: self.number,
            invoice_date: self.issue_date,
            due_date: self.due_date,
            supplier_name: self.seller_name,
            supplier_address: self.seller_address,
            supplier_vat_id: self.seller_vat_id,
            supplier_iban: iban,
            customer_name: self.buyer_name,
            currency: self.currency,
            subtotal: t.basis,
            vat_amount: t.tax,
            total: t.grand,
            po_reference: self.order_reference,
            delivery_note_reference: self.delivery_note_reference,
            invoice_reference: None,
            replaces_invoice: None,
            line_items: self.lines,
            field_confidence: Default::default(),
            einvoice: Some(EInvoiceSource {
                provider: "einvoice".into(),
                syntax: Some(SYNTAX.into()),
                profile: Some(profile),
                specification_id: self.specification_id,
                type_code: self.type_code,
                buyer_reference: self.buyer_reference,
                amount_due: t.due,
                prepaid_amount: t.prepaid,
                vat_total_accounting_currency: None,
                attachment,
                recommendation: Some("undefined".into()),
                findings: capped(findings),
                warnings: Vec::new(),
                review: capped(review),
                fallback_reason: None,
                disagreements: Vec::new(),
            }),
        };
        judge(&mut e);
        e.settle_credit_sign();
        e
    }

    /// The terms without which the document cannot be booked, that the XML lacks: each
    /// a review finding (an XML upload goes to a person, a hybrid's page is read).
    fn incomplete(&self) -> Vec<String> {
        [
            (
                "HeaderExchangedDocument/ID (the invoice number)",
                self.number.is_some(),
            ),
            (
                "HeaderExchangedDocument/IssueDateTime (the issue date, format 102)",
                self.issue_date.is_some(),
            ),
            (
                "SellerTradeParty/Name (the seller)",
                self.seller_name.is_some(),
            ),
            (
                "GrandTotalAmount (the gross total)",
                self.totals.grand.is_some(),
            ),
        ]
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(term, _)| format!("incomplete: the XML has no {term}"))
        .collect()
    }
}

/// The plain sums a ZUGFeRD 1.0 invoice must satisfy, each checked only when the XML
/// has every term it adds (to the cent): one review finding per sum that fails. A sum
/// involving the header's charges and allowances is not checked: 1.0's logistics service
/// charges may or may not be counted among them, so it could refuse a correct invoice.
fn arithmetic(t: &Totals, lines: &[LineItem]) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |stated: &str, value: Option<f64>, sum: &str, expected: Option<f64>| {
        if let (Some(value), Some(expected)) = (value, expected)
            && (value - expected).abs() >= 0.005
        {
            out.push(format!(
                "arithmetic: {stated} is {value:.2}, {sum} is {expected:.2}"
            ));
        }
    };
    let line_sum = (!lines.is_empty())
        .then(|| lines.iter().map(|l| l.amount).sum::<Option<f64>>())
        .flatten();
    check(
        "LineTotalAmount",
        t.line,
        "the sum of the lines' LineTotalAmount",
        line_sum,
    );
    check(
        "TaxTotalAmount",
        t.tax,
        "the sum of the ApplicableTradeTax CalculatedAmount",
        t.tax_breakdown,
    );
    check(
        "GrandTotalAmount",
        t.grand,
        "TaxBasisTotalAmount + TaxTotalAmount",
        t.basis.zip(t.tax).map(|(b, x)| b + x),
    );
    check(
        "DuePayableAmount",
        t.due,
        "GrandTotalAmount - TotalPrepaidAmount",
        t.grand.map(|g| g - t.prepaid.unwrap_or(0.0)),
    );
    out
}

/// The header's `SpecifiedTradeSettlementMonetarySummation`, each total in the invoice
/// currency when the XML gives it in two (`currencyID`), else the first one.
fn totals(settlement: Option<Node<'_, '_>>, currency: Option<&str>) -> Totals {
    let summation = at(settlement, &["SpecifiedTradeSettlementMonetarySummation"]);
    let total = |name: &str| {
        let all: Vec<Node<'_, '_>> = summation
            .map(|s| rams(s, name).collect())
            .unwrap_or_default();
        all.iter()
            .find(|n| currency.is_some() && n.attribute("currencyID").map(str::trim) == currency)
            .or(all.first())
            .and_then(|n| amount(*n))
    };
    let breakdown: Vec<Option<f64>> = settlement
        .map(|s| {
            rams(s, "ApplicableTradeTax")
                .map(|tax| at(Some(tax), &["CalculatedAmount"]).and_then(amount))
                .collect()
        })
        .unwrap_or_default();
    Totals {
        line: total("LineTotalAmount"),
        basis: total("TaxBasisTotalAmount"),
        tax: total("TaxTotalAmount"),
        grand: total("GrandTotalAmount"),
        prepaid: total("TotalPrepaidAmount"),
        due: total("DuePayableAmount"),
        tax_breakdown: (!breakdown.is_empty())
            .then(|| breakdown.into_iter().sum::<Option<f64>>())
            .flatten(),
    }
}

/// The seller's accounts of the credit transfers (`PayeePartyCreditorFinancialAccount`:
/// `IBANID`, else `ProprietaryID`). A payment means that debits the buyer's account (a
/// direct debit) names no account to pay to.
fn transfer_accounts(settlement: Node<'_, '_>) -> Vec<String> {
    rams(settlement, "SpecifiedTradeSettlementPaymentMeans")
        .filter(|means| child(Some(*means), RAM, "PayerPartyDebtorFinancialAccount").is_none())
        .flat_map(|means| rams(means, "PayeePartyCreditorFinancialAccount"))
        .filter_map(|account| {
            text(at(Some(account), &["IBANID"]))
                .or_else(|| text(at(Some(account), &["ProprietaryID"])))
        })
        .collect()
}

/// One `IncludedSupplyChainTradeLineItem`: its product's name (else description), the
/// billed quantity, the net price per unit (over `BasisQuantity`), the line total. A line
/// with none of them (a text-only line carrying a note) is no line item.
fn line(item: Node<'_, '_>) -> Option<LineItem> {
    let item = Some(item);
    let product = at(item, &["SpecifiedTradeProduct"]);
    let net = at(
        item,
        &[
            "SpecifiedSupplyChainTradeAgreement",
            "NetPriceProductTradePrice",
        ],
    );
    let line = LineItem {
        description: text(at(product, &["Name"]))
            .or_else(|| text(at(product, &["Description"])))
            .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        quantity: at(
            item,
            &["SpecifiedSupplyChainTradeDelivery", "BilledQuantity"],
        )
        .and_then(amount),
        unit_price: unit_price(
            at(net, &["ChargeAmount"]).and_then(amount),
            at(net, &["BasisQuantity"]).and_then(amount),
        ),
        amount: at(
            item,
            &[
                "SpecifiedSupplyChainTradeSettlement",
                "SpecifiedTradeSettlementMonetarySummation",
                "LineTotalAmount",
            ],
        )
        .and_then(amount),
    };
    let empty = line.description.is_empty()
        && line.quantity.is_none()
        && line.unit_price.is_none()
        && line.amount.is_none();
    (!empty).then_some(line)
}

/// The seller's `PostalTradeAddress`: the lines, postcode and city, country, joined.
fn address(a: Option<Node<'_, '_>>) -> Option<String> {
    let part = |name: &str| text(at(a, &[name]));
    let city = [part("PostcodeCode"), part("CityName")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let parts: Vec<String> = [part("LineOne"), part("LineTwo")]
        .into_iter()
        .flatten()
        .chain((!city.is_empty()).then_some(city))
        .chain(part("CountryID"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The first child element `ns:name`.
fn child<'a, 'i>(n: Option<Node<'a, 'i>>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    n?.children().find(|c| c.has_tag_name((ns, name)))
}

/// Every child element `ram:name`.
fn rams<'a, 'i>(n: Node<'a, 'i>, name: &str) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children().filter(move |c| c.has_tag_name((RAM, name)))
}

/// A path of `ram:` child elements from `n`, the first at each step.
fn at<'a, 'i>(n: Option<Node<'a, 'i>>, path: &[&str]) -> Option<Node<'a, 'i>> {
    path.iter()
        .try_fold(n?, |n, step| child(Some(n), RAM, step))
}

/// An element's text, trimmed; `None` when absent or blank.
fn text(n: Option<Node<'_, '_>>) -> Option<String> {
    n?.text()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// A decimal amount or quantity (`-1234.56`); `None` for anything else (an exponent, a
/// thousands separator, text).
fn amount(n: Node<'_, '_>) -> Option<f64> {
    let t = n.text()?.trim();
    if !t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+'))
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A date element's `udt:DateTimeString` of format 102 (`CCYYMMDD`, the format ZUGFeRD
/// 1.0 prescribes; one without a format is read as 102); `None` for any other.
fn date(n: Option<Node<'_, '_>>) -> Option<NaiveDate> {
    let s = child(n, UDT, "DateTimeString")?;
    if s.attribute("format").is_some_and(|f| f.trim() != "102") {
        return None;
    }
    let t = s.text()?.trim();
    if t.len() != 8 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    NaiveDate::parse_from_str(t, "%Y%m%d").ok()
}

#[cfg(test)]
mod tests;
