//! Maesn's documented schema of a `bookingProposal` part, as the stand-in enforces it
//! ([`proposal_problems`]): field types, standardized dates, ISO 4217 currencies, and
//! the [`REQUIRED`] fields DATEV cannot book without.

use serde_json::Value;

/// The fields a booking proposal for DATEV must carry, as this stand-in enforces them.
/// Maesn's schema (`CreateBookingProposalRequestDtoV2`) marks every field optional, and
/// its DATEV field list was not at hand; a DATEV booking proposal of an incoming invoice
/// cannot be booked without its document number, date, amount and currency (DATEV's
/// Belegfeld 1, Belegdatum, Umsatz, WKZ), so the stand-in refuses a proposal without
/// them, as DATEV's validation would after the task started.
pub const REQUIRED: [&str; 4] = [
    "number",
    "bookingProposalDate",
    "totalGrossAmount",
    "currency",
];

/// ISO 4217 alphabetic codes in use ("Maesn enforces international standards for all
/// input and output data", docs.maesn.com, Standardized Data).
const ISO_4217: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL \
BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD \
FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS \
KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK \
MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD \
SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX \
USD UYU UZS VES VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWL";

/// What Maesn's documented schema refuses in a `bookingProposal` part, one line each
/// (empty: valid). Types per field as Maesn's SDK declares them (strings, numbers, a
/// boolean, the `status` and line `type` enums); dates in Maesn's standardized format,
/// ISO 8601 date-times ("2024-01-01T00:00:00Z"); `currency` an ISO 4217 code; amounts JSON
/// numbers, never strings; `addresses[].city` at most 30 characters (DATEV); and the
/// [`REQUIRED`] fields. Fields it does not know are not refused: Maesn answers them
/// with a warning ("Field not used by target system").
pub fn proposal_problems(proposal: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(fields) = proposal.as_object() else {
        return vec!["bookingProposal must be a JSON object".into()];
    };
    for field in REQUIRED {
        if fields.get(field).is_none_or(Value::is_null) {
            problems.push(format!("{field} is required"));
        }
    }
    let date = |name: &str, value: &Value, problems: &mut Vec<String>| match value.as_str() {
        Some(text) if chrono::DateTime::parse_from_rfc3339(text).is_ok() => {}
        _ => problems.push(format!(
            "{name} must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z, not {value}"
        )),
    };
    let number = |name: &str, value: &Value, problems: &mut Vec<String>| {
        if !value.as_f64().is_some_and(f64::is_finite) {
            problems.push(format!("{name} must be a number, not {value}"));
        }
    };
    let string = |name: &str, value: &Value, problems: &mut Vec<String>| {
        if !value.is_string() {
            problems.push(format!("{name} must be a string, not {value}"));
        }
    };
    for (name, value) in fields {
        if value.is_null() {
            continue;
        }
        match name.as_str() {
            "bookingProposalDate"
            | "dueDate"
            | "deliveryDate"
            | "discountPaymentDate"
            | "discountPaymentDate2"
            | "paidDate" => date(name, value, &mut problems),
            "totalGrossAmount" => number(name, value, &mut problems),
            "id" | "number" | "vatId" | "orderId" | "notes" | "journalCode" | "ledgerName"
            | "generatorName" | "paymentTermId" => string(name, value, &mut problems),
            "currency"
                if !value.as_str().is_some_and(|c| {
                    c.len() == 3 && ISO_4217.split_whitespace().any(|k| k == c)
                }) =>
            {
                problems.push(format!("currency must be an ISO 4217 code, not {value}"));
            }
            "isPaymentOrder" if !value.is_boolean() => {
                problems.push(format!("isPaymentOrder must be a boolean, not {value}"));
            }
            "status" => {
                const STATUS: [&str; 9] = [
                    "DRAFT",
                    "SUBMITTED",
                    "OPEN",
                    "PARTIALLY_PAID",
                    "PAID",
                    "OVERDUE",
                    "VOIDED",
                    "DISPUTED",
                    "CANCELLED",
                ];
                if !value.as_str().is_some_and(|v| STATUS.contains(&v)) {
                    problems.push(format!("status must be one of {STATUS:?}, not {value}"));
                }
            }
            "contact" | "bankAccount" => match value.as_object() {
                None => problems.push(format!("{name} must be an object, not {value}")),
                Some(object) => {
                    for (key, inner) in object {
                        let path = format!("{name}.{key}");
                        match key.as_str() {
                            "accountNumber" | "number" => number(&path, inner, &mut problems),
                            _ => string(&path, inner, &mut problems),
                        }
                    }
                }
            },
            "addresses" => match value.as_array() {
                None => problems.push(format!("addresses must be an array, not {value}")),
                Some(addresses) => {
                    for (i, address) in addresses.iter().enumerate() {
                        if let Some(city) = address.get("city") {
                            match city.as_str() {
                                Some(c) if c.chars().count() <= 30 => {}
                                _ => problems.push(format!(
                                    "addresses[{i}].city must be a string of at most 30 characters"
                                )),
                            }
                        }
                    }
                }
            },
            "lineItems" => match value.as_array() {
                None => problems.push(format!("lineItems must be an array, not {value}")),
                Some(lines) => {
                    for (i, line) in lines.iter().enumerate() {
                        let Some(line) = line.as_object() else {
                            problems.push(format!("lineItems[{i}] must be an object"));
                            continue;
                        };
                        for (key, inner) in line {
                            let path = format!("lineItems[{i}].{key}");
                            match key.as_str() {
                                "totalGrossAmount"
                                | "totalNetAmount"
                                | "taxRatePercentage"
                                | "discountAmount"
                                | "discountAmount2"
                                | "discountPercentage"
                                | "discountPercentage2" => number(&path, inner, &mut problems),
                                "type" => {
                                    if !matches!(inner.as_str(), Some("PRODUCT" | "SERVICE")) {
                                        problems.push(format!(
                                            "{path} must be PRODUCT or SERVICE, not {inner}"
                                        ));
                                    }
                                }
                                "account" | "dimensions" => {}
                                _ => string(&path, inner, &mut problems),
                            }
                        }
                    }
                }
            },
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid() -> Value {
        json!({
            "id": "9d0bd8c5-5d3a-4f7e-8d5c-2b1f0b6c1a11",
            "number": "RE-2026-0042",
            "bookingProposalDate": "2026-01-15T00:00:00Z",
            "dueDate": "2026-02-14T00:00:00Z",
            "currency": "EUR",
            "totalGrossAmount": 119.0,
            "vatId": "DE123456789",
            "orderId": "PO-4711",
            "contact": { "name": "Lieferant GmbH" },
            "bankAccount": { "iban": "DE89370400440532013000" },
            "lineItems": [{ "description": "Druckerpapier A4", "totalNetAmount": 100.0 }],
        })
    }

    #[test]
    fn a_proposal_to_maesns_schema_passes() {
        assert_eq!(proposal_problems(&valid()), Vec::<String>::new());
    }

    #[test]
    fn what_maesns_schema_refuses_is_named_field_by_field() {
        let cases: [(&str, Value, &str); 9] = [
            (
                "totalGrossAmount",
                Value::Null,
                "totalGrossAmount is required",
            ),
            (
                "totalGrossAmount",
                json!("119.00"),
                "totalGrossAmount must be a number",
            ),
            (
                "bookingProposalDate",
                json!("15.01.2026"),
                "bookingProposalDate must be an ISO 8601 date-time",
            ),
            (
                "dueDate",
                json!("2026-02-14"),
                "dueDate must be an ISO 8601 date-time",
            ),
            (
                "currency",
                json!("EURO"),
                "currency must be an ISO 4217 code",
            ),
            (
                "currency",
                json!("eur"),
                "currency must be an ISO 4217 code",
            ),
            ("number", json!(42), "number must be a string"),
            (
                "lineItems",
                json!([{ "totalNetAmount": "100" }]),
                "lineItems[0].totalNetAmount must be a number",
            ),
            (
                "addresses",
                json!([{ "city": "Garmisch-Partenkirchen im Werdenfelser Land" }]),
                "addresses[0].city must be a string of at most 30 characters",
            ),
        ];
        for (field, value, expected) in cases {
            let mut proposal = valid();
            if value.is_null() {
                proposal.as_object_mut().unwrap().remove(field);
            } else {
                proposal[field] = value.clone();
            }
            let problems = proposal_problems(&proposal);
            assert!(
                problems.iter().any(|p| p.starts_with(expected)),
                "{field} = {value}: {problems:?}"
            );
        }
        assert_eq!(
            proposal_problems(&json!([])),
            ["bookingProposal must be a JSON object"]
        );
    }
}
