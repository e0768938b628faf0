//! The seeded generator of the labelled set: tenants, suppliers and their
//! documents, and the purchases every scenario builds from ([`super::scenarios`]).

use super::*;

pub(super) const TENANTS: [&str; 3] =
    ["Acme Handels GmbH", "Beta Bau AG", "Gamma Gastronomie GmbH"];

pub(super) struct SupplierSpec {
    pub(super) name: &'static str,
    pub(super) legal: &'static str,
    pub(super) products: &'static [(&'static str, f64)],
    pub(super) invoice_prefix: &'static str,
    pub(super) dn_prefix: &'static str,
    /// 0: `P-YYYY-NNNNN`, 1: bare `NNNNNN`, 2: `PYYYYNNNNN`, 3: `P/NNNNNN`.
    pub(super) style: u8,
}

pub(super) const SUPPLIERS: [SupplierSpec; 10] = [
    SupplierSpec {
        name: "Müller Bürobedarf",
        legal: "GmbH & Co. KG",
        products: &[
            ("Toner cartridge black", 89.0),
            ("Copy paper A4 80g", 4.5),
            ("Ballpoint pens blue", 0.8),
            ("Ring binder A4", 2.9),
        ],
        invoice_prefix: "RE",
        dn_prefix: "LS",
        style: 0,
    },
    SupplierSpec {
        name: "Müller Büromöbel",
        legal: "GmbH",
        products: &[
            ("Office chair ergonomic", 289.0),
            ("Desk height adjustable", 649.0),
            ("Filing cabinet", 199.0),
        ],
        invoice_prefix: "RE",
        dn_prefix: "LS",
        style: 1,
    },
    SupplierSpec {
        name: "Mueller Bürotechnik",
        legal: "KG",
        products: &[
            ("Laser printer", 399.0),
            ("Toner cartridge black", 92.0),
            ("Drum unit", 129.0),
        ],
        invoice_prefix: "RG",
        dn_prefix: "LF",
        style: 2,
    },
    SupplierSpec {
        name: "Schmidt Logistik",
        legal: "GmbH",
        products: &[
            ("Euro pallet", 12.0),
            ("Stretch film roll", 18.5),
            ("Shipping carton large", 1.2),
        ],
        invoice_prefix: "INV",
        dn_prefix: "DN",
        style: 3,
    },
    SupplierSpec {
        name: "Schmitt Logistik",
        legal: "AG",
        products: &[
            ("Euro pallet", 11.5),
            ("Packing tape", 2.2),
            ("Shipping carton small", 0.9),
        ],
        invoice_prefix: "RE",
        dn_prefix: "LS",
        style: 1,
    },
    SupplierSpec {
        name: "Becker Elektro",
        legal: "GmbH",
        products: &[
            ("Power cable 3m", 6.9),
            ("Extension lead 5-way", 14.9),
            ("LED tube 120cm", 9.5),
        ],
        invoice_prefix: "R",
        dn_prefix: "L",
        style: 0,
    },
    SupplierSpec {
        name: "Bäcker Elektrotechnik",
        legal: "GmbH",
        products: &[
            ("Circuit breaker 16A", 7.8),
            ("Cable duct 2m", 5.4),
            ("LED tube 120cm", 9.9),
        ],
        invoice_prefix: "RE",
        dn_prefix: "LS",
        style: 2,
    },
    SupplierSpec {
        name: "Nordwind Kaffee",
        legal: "GmbH",
        products: &[
            ("Coffee beans espresso 1kg", 21.0),
            ("Coffee beans crema 1kg", 19.0),
            ("Milk powder 500g", 6.5),
        ],
        invoice_prefix: "NK",
        dn_prefix: "NL",
        style: 0,
    },
    SupplierSpec {
        name: "Nordwind Kaffeeservice",
        legal: "GmbH",
        products: &[
            ("Coffee machine service", 145.0),
            ("Descaler tablets", 12.0),
            ("Coffee beans espresso 1kg", 22.5),
        ],
        invoice_prefix: "NS",
        dn_prefix: "NSL",
        style: 3,
    },
    SupplierSpec {
        name: "Hansa Werkzeuge",
        legal: "AG",
        products: &[
            ("Cordless drill 18V", 159.0),
            ("Drill bit set", 29.0),
            ("Safety gloves pair", 3.4),
        ],
        invoice_prefix: "HW",
        dn_prefix: "HL",
        style: 1,
    },
];

/// Two companies whose names normalise alike (`mueller`), with the same goods.
pub(super) static TWIN_SUPPLIERS: [SupplierSpec; 2] = [
    SupplierSpec {
        name: "Müller",
        legal: "GmbH",
        products: &[
            ("Toner cartridge black", 89.0),
            ("Copy paper A4 80g", 4.5),
            ("Ring binder A4", 2.9),
        ],
        invoice_prefix: "RE",
        dn_prefix: "LS",
        style: 0,
    },
    SupplierSpec {
        name: "Mueller",
        legal: "GmbH",
        products: &[
            ("Toner cartridge black", 89.0),
            ("Copy paper A4 80g", 4.5),
            ("Ring binder A4", 2.9),
        ],
        invoice_prefix: "R",
        dn_prefix: "L",
        style: 1,
    },
];

/// Who a generated document belongs to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Purchase {
    pub(super) tenant: usize,
    pub(super) case: usize,
    pub(super) scenario: Scenario,
    pub(super) supplier: usize,
}

/// A supplier as the generator uses it: fixed identity, running document numbers.
pub(super) struct Supplier {
    pub(super) spec: &'static SupplierSpec,
    pub(super) vat_id: String,
    pub(super) iban: String,
    pub(super) next_invoice: u32,
    pub(super) next_dn: u32,
}

#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) product: &'static str,
    pub(super) price: f64,
    pub(super) quantity: u32,
}

pub(super) struct Generator {
    pub(super) rng: StdRng,
    pub(super) re_extractions: Vec<(usize, Value)>,
    /// While set, citations come in other shapes ([`Scenario::MessyReferences`]).
    pub(super) messy: bool,
    /// The two suppliers of one name ([`Scenario::LookAlikeSuppliers`]), made when first
    /// needed (indices into `suppliers`).
    pub(super) twins: Option<(usize, usize)>,
    pub(super) suppliers: Vec<Supplier>,
    /// Per tenant: the suppliers it buys from (indices) and its next PO number.
    pub(super) tenant_suppliers: Vec<Vec<usize>>,
    pub(super) next_po: Vec<u32>,
    pub(super) documents: Vec<EvalDocument>,
    pub(super) edges: BTreeSet<(usize, usize)>,
    pub(super) next_case: usize,
}

/// Generates a set of at least `documents` documents (the last purchase may add a few
/// more), the same set for the same seed.
pub fn generate(seed: u64, documents: usize) -> EvalSet {
    generate_with(seed, documents, false)
}

/// [`generate`], and with `semantic_cases` about 10 % more documents that only a
/// semantic search finds: [`Scenario::RenamedSupplier`] purchases. Without them the set
/// is exactly [`generate`]'s.
pub fn generate_with(seed: u64, documents: usize, semantic_cases: bool) -> EvalSet {
    generate_mix(seed, documents, semantic_cases, Mix::Classic)
}

/// [`generate_with`] with the purchases of `mix`.
pub fn generate_mix(seed: u64, documents: usize, semantic_cases: bool, mix: Mix) -> EvalSet {
    generate_for(seed, documents, semantic_cases, mix, TENANTS.len())
}

/// [`generate_mix`] for the first `tenants` tenants (1 to 3): one tenant is a customer's
/// bulk import, every purchase in one tenant's write phases. With 3, exactly
/// [`generate_mix`]'s set.
pub fn generate_for(
    seed: u64,
    documents: usize,
    semantic_cases: bool,
    mix: Mix,
    tenants: usize,
) -> EvalSet {
    let tenants = tenants.clamp(1, TENANTS.len());
    let mut rng = StdRng::seed_from_u64(seed);
    let suppliers: Vec<Supplier> = SUPPLIERS
        .iter()
        .enumerate()
        .map(|(i, spec)| Supplier {
            spec,
            vat_id: format!("DE{}", 100_000_000 + rng.random_range(0..899_999_999u32)),
            iban: format!(
                "DE{:02}{:08}{:010}",
                10 + i,
                rng.random_range(10_000_000..99_999_999u32),
                rng.random_range(0..9_999_999_999u64)
            ),
            next_invoice: rng.random_range(1..5_000),
            next_dn: rng.random_range(1..5_000),
        })
        .collect();
    let tenant_suppliers = (0..tenants)
        .map(|_| {
            let mut all: Vec<usize> = (0..SUPPLIERS.len()).collect();
            all.shuffle(&mut rng);
            all.truncate(8);
            all
        })
        .collect();
    let mut g = Generator {
        rng,
        re_extractions: Vec::new(),
        messy: false,
        twins: None,
        suppliers,
        tenant_suppliers,
        next_po: (0..tenants).map(|t| 40 + t as u32 * 7).collect(),
        documents: Vec::new(),
        edges: BTreeSet::new(),
        next_case: 0,
    };
    while g.documents.len() < documents {
        let tenant = g.rng.random_range(0..tenants);
        let roll = g.rng.random_range(0..100);
        if mix == Mix::Full {
            g.full_mix(tenant, roll);
            continue;
        }
        match roll {
            0..30 => {
                g.simple(tenant, Scenario::Simple);
            }
            30..45 => g.standing_order(tenant),
            45..57 => g.partial_deliveries(tenant),
            57..65 => g.final_invoice(tenant),
            65..75 => g.split_invoices(tenant),
            75..85 => g.credit_note(tenant),
            85..93 => g.no_references(tenant),
            _ => g.lone(tenant),
        }
    }
    if semantic_cases {
        let target = g.documents.len() + documents.div_ceil(10);
        while g.documents.len() < target {
            let tenant = g.rng.random_range(0..tenants);
            g.renamed_supplier(tenant);
        }
    }
    let mut arrival: Vec<usize> = (0..g.documents.len()).collect();
    arrival.shuffle(&mut g.rng);
    EvalSet {
        seed,
        tenants: TENANTS[..tenants].iter().map(|t| (*t).to_owned()).collect(),
        documents: g.documents,
        edges: g.edges,
        arrival,
        re_extractions: g.re_extractions,
    }
}

pub(super) fn day(offset: u64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 1, 1).expect("valid date") + Days::new(offset)
}

pub(super) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

impl Generator {
    pub(super) fn case(&mut self) -> usize {
        self.next_case += 1;
        self.next_case
    }

    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    pub(super) fn supplier(&mut self, tenant: usize) -> usize {
        let list = &self.tenant_suppliers[tenant];
        list[self.rng.random_range(0..list.len())]
    }

    pub(super) fn lines(&mut self, supplier: usize) -> Vec<Line> {
        let products = self.suppliers[supplier].spec.products;
        let count = self.rng.random_range(1..=products.len().min(3));
        let mut picked: Vec<usize> = (0..products.len()).collect();
        picked.shuffle(&mut self.rng);
        picked
            .into_iter()
            .take(count)
            .map(|i| Line {
                product: products[i].0,
                price: products[i].1,
                quantity: self.rng.random_range(2..=40) * 5,
            })
            .collect()
    }

    pub(super) fn po_number(&mut self, tenant: usize) -> String {
        self.next_po[tenant] += 1;
        let n = self.next_po[tenant];
        match tenant % 3 {
            0 => format!("PO-2024-{n:04}"),
            1 => format!("45{n:08}"),
            _ => format!("B2024/{n:04}"),
        }
    }

    pub(super) fn supplier_number(&mut self, supplier: usize, delivery: bool) -> String {
        let s = &mut self.suppliers[supplier];
        let (prefix, n) = if delivery {
            s.next_dn += 1;
            (s.spec.dn_prefix, s.next_dn)
        } else {
            s.next_invoice += 1;
            (s.spec.invoice_prefix, s.next_invoice)
        };
        match s.spec.style {
            0 => format!("{prefix}-2024-{n:05}"),
            1 => format!("{}", 10_000 + n),
            2 => format!("{prefix}2024{n:05}"),
            _ => format!("{prefix}/{n:06}"),
        }
    }

    pub(super) fn credit_number(&mut self, supplier: usize) -> String {
        let s = &mut self.suppliers[supplier];
        s.next_invoice += 1;
        format!("GS-2024-{:05}", s.next_invoice)
    }

    /// The supplier's name as a document prints it.
    pub(super) fn supplier_name(&mut self, supplier: usize) -> String {
        let spec = self.suppliers[supplier].spec;
        let roll = self.rng.random_range(0..100);
        let name = match roll {
            0..60 => format!("{} {}", spec.name, spec.legal),
            60..75 => spec.name.to_owned(),
            75..90 => fold_umlauts(&format!("{} {}", spec.name, spec.legal)).to_uppercase(),
            _ => fold_umlauts(spec.name),
        };
        if self.chance(0.03) {
            swap_two_letters(&mut self.rng, &name)
        } else {
            name
        }
    }

    /// An own number as printed: mostly as issued, sometimes reformatted.
    pub(super) fn printed(&mut self, number: &str) -> String {
        if self.messy && self.chance(0.3) {
            return shape_noise(&mut self.rng, number);
        }
        if self.chance(0.1) {
            reformat(&mut self.rng, number)
        } else {
            number.to_owned()
        }
    }

    /// A number as another document cites it, with the noise of extraction.
    pub(super) fn cited(&mut self, number: &str) -> String {
        if self.messy {
            let shaped = shape_noise(&mut self.rng, number);
            // A third of them share the field with the supplier's order confirmation,
            // written as suppliers write it: after a slash, a space, or nothing at all.
            // Chosen from the number itself, not the generator's stream, so that every
            // other document of a seed stays what it was.
            let h = number.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            if h % 3 == 0 {
                let confirmation = 10_000 + (h >> 8) % 90_000;
                return match (h >> 32) % 3 {
                    0 => format!("{shaped} / AB-{confirmation}"),
                    1 => format!("{shaped} AB-{confirmation}"),
                    _ => format!("{shaped}AB{confirmation}"),
                };
            }
            return shaped;
        }
        let roll = self.rng.random_range(0..1000);
        match roll {
            0..750 => number.to_owned(),
            750..850 => reformat(&mut self.rng, number),
            850..920 => drop_prefix(number),
            920..950 => ocr_letter(&mut self.rng, number),
            950..970 => transpose(&mut self.rng, number),
            970..990 => drop_digit(&mut self.rng, number),
            _ => change_digit(&mut self.rng, number),
        }
    }

    pub(super) fn push(
        &mut self,
        tenant: usize,
        case: usize,
        scenario: Scenario,
        doc_type: DocumentType,
        data: Value,
    ) -> usize {
        self.documents.push(EvalDocument {
            tenant,
            doc_type,
            data,
            case,
            scenario,
        });
        self.documents.len() - 1
    }

    pub(super) fn link(&mut self, a: usize, b: usize) {
        self.edges.insert((a.min(b), a.max(b)));
    }

    pub(super) fn base(
        &mut self,
        tenant: usize,
        supplier: usize,
        doc_type: DocumentType,
        number: &str,
        date: NaiveDate,
    ) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("extraction_successful".into(), json!(true));
        m.insert("confidence".into(), json!("high"));
        m.insert("missing_fields".into(), json!([]));
        m.insert("document_type".into(), json!(doc_type.as_str()));
        let printed = self.printed(number);
        m.insert("invoice_number".into(), json!(printed));
        m.insert("invoice_date".into(), json!(date.to_string()));
        let name = self.supplier_name(supplier);
        m.insert("supplier_name".into(), json!(name));
        let vat_chance = match doc_type {
            DocumentType::Invoice | DocumentType::CreditNote => 0.95,
            DocumentType::PurchaseOrder => 0.8,
            _ => 0.5,
        };
        if self.chance(vat_chance) {
            let vat = self.suppliers[supplier].vat_id.clone();
            let vat = if self.chance(0.3) {
                format!("{} {} {} {}", &vat[..2], &vat[2..5], &vat[5..8], &vat[8..])
            } else {
                vat
            };
            m.insert("supplier_vat_id".into(), json!(vat));
        }
        if matches!(doc_type, DocumentType::Invoice | DocumentType::CreditNote) && self.chance(0.85)
        {
            m.insert(
                "supplier_iban".into(),
                json!(self.suppliers[supplier].iban.clone()),
            );
        }
        m.insert("customer_name".into(), json!(TENANTS[tenant]));
        m.insert("currency".into(), json!("EUR"));
        m
    }

    pub(super) fn with_lines(
        &mut self,
        m: &mut serde_json::Map<String, Value>,
        lines: &[Line],
        amounts: bool,
    ) {
        let items: Vec<Value> = lines
            .iter()
            .map(|l| {
                let description = if self.rng.random_bool(0.2) {
                    l.product.to_uppercase().replace(' ', ", ")
                } else {
                    l.product.to_owned()
                };
                if amounts {
                    json!({"description": description, "quantity": l.quantity, "unit_price": l.price,
                           "amount": round2(l.price * l.quantity as f64)})
                } else {
                    json!({"description": description, "quantity": l.quantity})
                }
            })
            .collect();
        m.insert("line_items".into(), Value::Array(items));
        if amounts {
            let net = round2(lines.iter().map(|l| l.price * l.quantity as f64).sum());
            let vat = round2(net * 0.19);
            m.insert("subtotal".into(), json!(net));
            m.insert("vat_amount".into(), json!(vat));
            m.insert("total".into(), json!(round2(net + vat)));
        }
    }

    pub(super) fn purchase_order(
        &mut self,
        p: Purchase,
        number: &str,
        date: NaiveDate,
        lines: &[Line],
    ) -> usize {
        let mut m = self.base(
            p.tenant,
            p.supplier,
            DocumentType::PurchaseOrder,
            number,
            date,
        );
        self.with_lines(&mut m, lines, true);
        self.push(
            p.tenant,
            p.case,
            p.scenario,
            DocumentType::PurchaseOrder,
            Value::Object(m),
        )
    }

    pub(super) fn delivery_note(
        &mut self,
        p: Purchase,
        number: &str,
        po: Option<&str>,
        date: NaiveDate,
        lines: &[Line],
    ) -> usize {
        let mut m = self.base(
            p.tenant,
            p.supplier,
            DocumentType::DeliveryNote,
            number,
            date,
        );
        if let Some(po) = po
            && self.chance(0.92)
        {
            let cited = self.cited(po);
            m.insert("po_reference".into(), json!(cited));
        }
        self.with_lines(&mut m, lines, false);
        self.push(
            p.tenant,
            p.case,
            p.scenario,
            DocumentType::DeliveryNote,
            Value::Object(m),
        )
    }

    pub(super) fn invoice(
        &mut self,
        p: Purchase,
        number: &str,
        po: Option<&str>,
        dns: &[String],
        date: NaiveDate,
        lines: &[Line],
    ) -> usize {
        let mut m = self.base(p.tenant, p.supplier, DocumentType::Invoice, number, date);
        m.insert("due_date".into(), json!((date + Days::new(30)).to_string()));
        if let Some(po) = po {
            let cited = self.cited(po);
            m.insert("po_reference".into(), json!(cited));
        }
        if !dns.is_empty() {
            let cited: Vec<String> = dns.iter().map(|dn| self.cited(dn)).collect();
            m.insert("delivery_note_reference".into(), json!(cited.join(", ")));
        }
        self.with_lines(&mut m, lines, true);
        self.push(
            p.tenant,
            p.case,
            p.scenario,
            DocumentType::Invoice,
            Value::Object(m),
        )
    }

    pub(super) fn start(&mut self) -> u64 {
        self.rng.random_range(0..330)
    }
}
