#!/usr/bin/env python3
"""Labels e-invoices for `docflow eval extraction` from their own XML.

    scripts/label_einvoices.py OUT_DIR SOURCE...

Each SOURCE is an XML e-invoice (UBL 2.1 Invoice/CreditNote or UN/CEFACT CII), a hybrid
PDF (ZUGFeRD / Factur-X: the CII XML is found among the PDF's streams), or a directory
searched for both. For every readable invoice, OUT_DIR gets a symlink to the file and
`<name>.json` with the expected contract fields, read here with Python's standard
library only (ElementTree, zlib): an implementation independent of the Rust reader it
measures. Files without an EN 16931 invoice (no payload, ZUGFeRD 1.0, ORDER-X, broken)
are listed on stderr and skipped.

    scripts/label_einvoices.py /tmp/xr ../shared/corpora/xrechnung-testsuite/src/test/business-cases
    docflow eval extraction /tmp/xr

Labels: document_type (BT-3 of BR-CL-01's credit-note list, or a negative BT-112: credit_note), invoice_number (BT-1), invoice_date
(BT-2), due_date (BT-9), currency (BT-5), supplier_name (BT-27), supplier_vat_id (BT-31),
supplier_iban (BT-84), customer_name (BT-44), subtotal (BT-109), vat_amount (BT-110),
total (BT-112), po_reference (BT-13), delivery_note_reference (BT-16),
invoice_reference (BT-25; on a corrected invoice, BT-3 384, it is replaces_invoice),
line_items (BT-131 per line).

A credit note's amounts are labelled as their sizes (docs/extraction.md, "The sign of a
credit note"): one whose BT-112 is negative (a credit in substance) has its totals and
line amounts negated.
"""

import json
import os
import re
import sys
import zlib
import xml.etree.ElementTree as ET

CBC = "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}"
CAC = "{urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2}"
RSM = "{urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100}"
RAM = "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}"
UDT = "{urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100}"

# BR-CL-01's credit-note list (EN 16931 validation artefacts, UNTDID 1001 restricted);
# 81 is on both lists and counts as a credit note.
CREDIT_NOTE_CODES = {"81", "83", "261", "262", "296", "308", "381", "396", "420", "458", "502", "503", "532"}


def text(node, path):
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None or not found.text.strip():
        return None
    return found.text.strip()


def amount(value):
    return None if value is None else round(float(value), 2)


def compact(value):
    return None if value is None else re.sub(r"\s+", "", value)


def cii_date(node, path):
    value = text(node, path)
    if value and re.fullmatch(r"\d{8}", value):
        return f"{value[:4]}-{value[4:6]}-{value[6:]}"
    return value


def doc_type(code, total, credit_note_root=False):
    """A credit-note code, or no code on a CreditNote root; an invoice code whose gross
    total (BT-112) is negative is a credit in substance."""
    if code in CREDIT_NOTE_CODES or (code is None and credit_note_root):
        return "credit_note"
    if total is not None and total < 0:
        return "credit_note"
    return "invoice"


def ubl(root):
    credit = root.tag.endswith("}CreditNote")
    code = text(root, CBC + ("CreditNoteTypeCode" if credit else "InvoiceTypeCode"))
    currency = text(root, CBC + "DocumentCurrencyCode")
    seller = root.find(f"{CAC}AccountingSupplierParty/{CAC}Party")
    buyer = root.find(f"{CAC}AccountingCustomerParty/{CAC}Party")
    vat_id = None
    for scheme in seller.findall(f"{CAC}PartyTaxScheme") if seller is not None else []:
        if text(scheme, f"{CAC}TaxScheme/{CBC}ID") == "VAT":
            vat_id = text(scheme, CBC + "CompanyID")
            break
    vat = None
    for total in root.findall(f"{CAC}TaxTotal"):
        node = total.find(CBC + "TaxAmount")
        if node is not None and node.get("currencyID") == currency:
            vat = amount(node.text)
            break
    due = text(root, CBC + "DueDate") or text(root, f"{CAC}PaymentMeans/{CBC}PaymentDueDate")
    monetary = root.find(CAC + "LegalMonetaryTotal")
    line_tag = CAC + ("CreditNoteLine" if credit else "InvoiceLine")
    return {
        "document_type": doc_type(
            code, amount(text(monetary, CBC + "TaxInclusiveAmount")), credit
        ),
        "invoice_number": text(root, CBC + "ID"),
        "invoice_date": text(root, CBC + "IssueDate"),
        "due_date": due,
        "currency": currency,
        "supplier_name": text(seller, f"{CAC}PartyLegalEntity/{CBC}RegistrationName"),
        "supplier_vat_id": compact(vat_id),
        "supplier_iban": compact(text(root, f"{CAC}PaymentMeans/{CAC}PayeeFinancialAccount/{CBC}ID")),
        "customer_name": text(buyer, f"{CAC}PartyLegalEntity/{CBC}RegistrationName"),
        "subtotal": amount(text(monetary, CBC + "TaxExclusiveAmount")),
        "vat_amount": vat,
        "total": amount(text(monetary, CBC + "TaxInclusiveAmount")),
        "po_reference": text(root, f"{CAC}OrderReference/{CBC}ID"),
        "delivery_note_reference": text(root, f"{CAC}DespatchDocumentReference/{CBC}ID"),
        "invoice_reference": text(root, f"{CAC}BillingReference/{CAC}InvoiceDocumentReference/{CBC}ID"),
        "line_items": [
            {"amount": amount(text(line, CBC + "LineExtensionAmount"))}
            for line in root.findall(line_tag)
        ],
    }


def cii(root):
    doc = root.find(RSM + "ExchangedDocument")
    trade = root.find(RSM + "SupplyChainTradeTransaction")
    agreement = trade.find(RAM + "ApplicableHeaderTradeAgreement")
    delivery = trade.find(RAM + "ApplicableHeaderTradeDelivery")
    settlement = trade.find(RAM + "ApplicableHeaderTradeSettlement")
    seller = agreement.find(RAM + "SellerTradeParty")
    currency = text(settlement, RAM + "InvoiceCurrencyCode")
    vat_id = None
    for reg in seller.findall(RAM + "SpecifiedTaxRegistration") if seller is not None else []:
        node = reg.find(RAM + "ID")
        if node is not None and node.get("schemeID") == "VA":
            vat_id = node.text
            break
    summation = settlement.find(RAM + "SpecifiedTradeSettlementHeaderMonetarySummation")
    vat = None
    for node in summation.findall(RAM + "TaxTotalAmount") if summation is not None else []:
        if node.get("currencyID") in (None, currency):
            vat = amount(node.text)
            break
    iban = None
    for means in settlement.findall(RAM + "SpecifiedTradeSettlementPaymentMeans"):
        account = means.find(RAM + "PayeePartyCreditorFinancialAccount")
        iban = text(account, RAM + "IBANID") or text(account, RAM + "ProprietaryID")
        if iban:
            break
    code = text(doc, RAM + "TypeCode")
    lines = []
    for line in trade.findall(RAM + "IncludedSupplyChainTradeLineItem"):
        lines.append({"amount": amount(text(
            line,
            f"{RAM}SpecifiedLineTradeSettlement/{RAM}SpecifiedTradeSettlementLineMonetarySummation/{RAM}LineTotalAmount",
        ))})
    return {
        "document_type": doc_type(code, amount(text(summation, RAM + "GrandTotalAmount"))),
        "invoice_number": text(doc, RAM + "ID"),
        "invoice_date": cii_date(doc, f"{RAM}IssueDateTime/{UDT}DateTimeString"),
        "due_date": cii_date(settlement, f"{RAM}SpecifiedTradePaymentTerms/{RAM}DueDateDateTime/{UDT}DateTimeString"),
        "currency": currency,
        "supplier_name": text(seller, RAM + "Name"),
        "supplier_vat_id": compact(vat_id),
        "supplier_iban": compact(iban),
        "customer_name": text(agreement, f"{RAM}BuyerTradeParty/{RAM}Name"),
        "subtotal": amount(text(summation, RAM + "TaxBasisTotalAmount")),
        "vat_amount": vat,
        "total": amount(text(summation, RAM + "GrandTotalAmount")),
        "po_reference": text(agreement, f"{RAM}BuyerOrderReferencedDocument/{RAM}IssuerAssignedID"),
        "delivery_note_reference": text(delivery, f"{RAM}DespatchAdviceReferencedDocument/{RAM}IssuerAssignedID"),
        "invoice_reference": text(settlement, f"{RAM}InvoiceReferencedDocument/{RAM}IssuerAssignedID"),
        "line_items": lines,
    }


def pdf_payload(data):
    """The CII invoice among a PDF's (Flate-compressed or plain) streams, or None."""
    for match in re.finditer(rb"stream\r?\n", data):
        start = match.end()
        end = data.find(b"endstream", start)
        if end < 0:
            break
        raw = data[start:end]
        for candidate in (raw, None):
            try:
                body = candidate if candidate is not None else zlib.decompressobj().decompress(raw, 64 << 20)
            except zlib.error:
                continue
            if body.lstrip(b"\xef\xbb\xbf \r\n\t").startswith(b"<") and b"CrossIndustryInvoice" in body:
                return body
    return None


def conventions(fields, code):
    """The contract's rules that are not EN 16931's: a 384's BT-25 is what it replaces,
    and a credit note's amounts are their sizes."""
    if code == "384" and fields.get("document_type") == "invoice":
        fields["replaces_invoice"] = fields.pop("invoice_reference", None)
    total, subtotal = fields.get("total"), fields.get("subtotal")
    negative = total < 0 if total is not None else (subtotal is not None and subtotal < 0)
    if fields.get("document_type") == "credit_note" and negative:
        for key in ("subtotal", "vat_amount", "total"):
            if fields.get(key) is not None:
                fields[key] = -fields[key]
        for line in fields.get("line_items") or []:
            if line.get("amount") is not None:
                line["amount"] = -line["amount"]
    return fields


def label(data):
    if data.startswith(b"%PDF"):
        data = pdf_payload(data)
        if data is None:
            raise ValueError("no CII invoice among the PDF's streams")
    if b"<!DOCTYPE" in data[:4096]:
        raise ValueError("a DTD: not an e-invoice")
    root = ET.fromstring(data)
    if root.tag in (
        "{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}Invoice",
        "{urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2}CreditNote",
    ):
        credit = root.tag.endswith("}CreditNote")
        code = text(root, CBC + ("CreditNoteTypeCode" if credit else "InvoiceTypeCode"))
        return conventions(ubl(root), code)
    if root.tag == RSM + "CrossIndustryInvoice":
        return conventions(cii(root), text(root.find(RSM + "ExchangedDocument"), RAM + "TypeCode"))
    raise ValueError(f"root {root.tag} is not an EN 16931 invoice")


def sources(paths):
    for path in paths:
        if os.path.isdir(path):
            for dirpath, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    if name.lower().endswith((".xml", ".pdf")):
                        yield os.path.join(dirpath, name)
        else:
            yield path


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    written = 0
    for path in sources(argv[2:]):
        with open(path, "rb") as f:
            data = f.read()
        try:
            expected = label(data)
        except Exception as e:  # a broken sample is reported, not fatal
            print(f"skipped {path}: {e}", file=sys.stderr)
            continue
        name = os.path.basename(path)
        link = os.path.join(out, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(path), link)
        stem = os.path.splitext(name)[0]
        with open(os.path.join(out, stem + ".json"), "w") as f:
            json.dump(expected, f, indent=1, ensure_ascii=False)
        written += 1
    print(f"{written} labelled documents in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
