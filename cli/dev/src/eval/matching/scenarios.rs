//! The scenarios of the labelled set (the table in [`super`]): each builds one
//! purchase's documents and its true links.

use super::*;

impl Generator {
    /// PO → delivery note → invoice; the invoice cites the PO (95 %) and the note (60 %).
    pub(super) fn simple(
        &mut self,
        tenant: usize,
        scenario: Scenario,
    ) -> (usize, usize, usize, usize, usize, Vec<Line>, String) {
        let case = self.case();
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let dn_no = self.supplier_number(supplier, true);
        let inv_no = self.supplier_number(supplier, false);
        let po = self.purchase_order(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &po_no,
            day(d0),
            &lines,
        );
        let d1 = d0 + self.rng.random_range(2..12);
        let dn = self.delivery_note(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &dn_no,
            Some(&po_no),
            day(d1),
            &lines,
        );
        let d2 = d1 + self.rng.random_range(0..10);
        let cite_po = self.chance(0.95);
        let cite_dn = self.chance(0.6);
        let dns = if cite_dn { vec![dn_no] } else { vec![] };
        let inv = self.invoice(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &inv_no,
            cite_po.then_some(po_no.as_str()),
            &dns,
            day(d2),
            &lines,
        );
        self.link(po, dn);
        self.link(po, inv);
        self.link(dn, inv);
        (case, supplier, po, dn, inv, lines, inv_no)
    }

    /// 3–6 weekly orders of the same goods: identical totals, one cluster per week.
    pub(super) fn standing_order(&mut self, tenant: usize) {
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        let weeks = self.rng.random_range(3..=6);
        for week in 0..weeks {
            let case = self.case();
            let scenario = Scenario::StandingOrder;
            let date = d0 + 7 * week;
            let po_no = self.po_number(tenant);
            let dn_no = self.supplier_number(supplier, true);
            let inv_no = self.supplier_number(supplier, false);
            let po = self.purchase_order(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &po_no,
                day(date),
                &lines,
            );
            let d1 = date + self.rng.random_range(1..4);
            let dn = self.delivery_note(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &dn_no,
                Some(&po_no),
                day(d1),
                &lines,
            );
            let d2 = d1 + self.rng.random_range(0..5);
            let dns = if self.chance(0.5) {
                vec![dn_no]
            } else {
                vec![]
            };
            let inv = self.invoice(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &inv_no,
                Some(&po_no),
                &dns,
                day(d2),
                &lines,
            );
            self.link(po, dn);
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// Splits every line's quantity over `parts` deliveries (each at least 5).
    pub(super) fn split(&mut self, lines: &[Line], parts: usize) -> Vec<Vec<Line>> {
        let mut out: Vec<Vec<Line>> = vec![Vec::new(); parts];
        for line in lines {
            let mut left = line.quantity.max(5 * parts as u32);
            for (i, part) in out.iter_mut().enumerate() {
                let quantity = if i + 1 == parts {
                    left
                } else {
                    let max = left - 5 * (parts - i - 1) as u32;
                    let q = self.rng.random_range(1..=(max / 5).max(1)) * 5;
                    q.min(max)
                };
                left -= quantity;
                part.push(Line {
                    quantity,
                    ..line.clone()
                });
            }
        }
        out
    }

    /// PO, 2–3 delivery notes, one invoice per delivery (citing the PO 90 %, its note 70 %).
    pub(super) fn partial_deliveries(&mut self, tenant: usize) {
        let case = self.case();
        let scenario = Scenario::PartialDeliveries;
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &po_no,
            day(d0),
            &lines,
        );
        let parts = self.rng.random_range(2..=3);
        let deliveries = self.split(&lines, parts);
        let mut date = d0;
        for delivered in deliveries {
            date += self.rng.random_range(3..15);
            let dn_no = self.supplier_number(supplier, true);
            let dn = self.delivery_note(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &dn_no,
                Some(&po_no),
                day(date),
                &delivered,
            );
            let inv_no = self.supplier_number(supplier, false);
            let cite_po = self.chance(0.9);
            let dns = if self.chance(0.7) {
                vec![dn_no]
            } else {
                vec![]
            };
            let d2 = date + self.rng.random_range(0..5);
            let inv = self.invoice(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &inv_no,
                cite_po.then_some(po_no.as_str()),
                &dns,
                day(d2),
                &delivered,
            );
            self.link(po, dn);
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// PO, 2–3 delivery notes, one final invoice over all of them (citing every note 80 %).
    pub(super) fn final_invoice(&mut self, tenant: usize) {
        let case = self.case();
        let scenario = Scenario::FinalInvoice;
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &po_no,
            day(d0),
            &lines,
        );
        let parts = self.rng.random_range(2..=3);
        let deliveries = self.split(&lines, parts);
        let mut date = d0;
        let mut notes = Vec::new();
        let mut numbers = Vec::new();
        for delivered in deliveries {
            date += self.rng.random_range(3..10);
            let dn_no = self.supplier_number(supplier, true);
            let dn = self.delivery_note(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &dn_no,
                Some(&po_no),
                day(date),
                &delivered,
            );
            notes.push(dn);
            numbers.push(dn_no);
            self.link(po, dn);
        }
        let inv_no = self.supplier_number(supplier, false);
        let dns = if self.chance(0.8) { numbers } else { vec![] };
        let d2 = date + self.rng.random_range(0..7);
        let inv = self.invoice(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &inv_no,
            Some(&po_no),
            &dns,
            day(d2),
            &lines,
        );
        self.link(po, inv);
        for dn in notes {
            self.link(dn, inv);
        }
    }

    /// PO, one delivery note, two invoices each billing some of the lines.
    pub(super) fn split_invoices(&mut self, tenant: usize) {
        let case = self.case();
        let scenario = Scenario::SplitInvoices;
        let supplier = self.supplier(tenant);
        let mut lines = self.lines(supplier);
        if lines.len() < 2 {
            let products = self.suppliers[supplier].spec.products;
            let other = products
                .iter()
                .find(|p| p.0 != lines[0].product)
                .expect("suppliers have 3+ products");
            lines.push(Line {
                product: other.0,
                price: other.1,
                quantity: self.rng.random_range(2..=40) * 5,
            });
        }
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &po_no,
            day(d0),
            &lines,
        );
        let d1 = d0 + self.rng.random_range(2..12);
        let dn_no = self.supplier_number(supplier, true);
        let dn = self.delivery_note(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &dn_no,
            Some(&po_no),
            day(d1),
            &lines,
        );
        self.link(po, dn);
        let cut = self.rng.random_range(1..lines.len());
        for part in [lines[..cut].to_vec(), lines[cut..].to_vec()] {
            let inv_no = self.supplier_number(supplier, false);
            let cite_po = self.chance(0.95);
            let dns = if self.chance(0.5) {
                vec![dn_no.clone()]
            } else {
                vec![]
            };
            let d2 = d1 + self.rng.random_range(0..10);
            let inv = self.invoice(
                Purchase {
                    tenant,
                    case,
                    scenario,
                    supplier,
                },
                &inv_no,
                cite_po.then_some(po_no.as_str()),
                &dns,
                day(d2),
                &part,
            );
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// A simple purchase and a credit note correcting its invoice (in full or in part).
    pub(super) fn credit_note(&mut self, tenant: usize) {
        let (case, supplier, _, _, inv, lines, inv_no) = self.simple(tenant, Scenario::CreditNote);
        let inv_date = self.documents[inv].data["invoice_date"]
            .as_str()
            .and_then(|d| d.parse::<NaiveDate>().ok())
            .expect("generated invoices have a date");
        let date = inv_date + Days::new(self.rng.random_range(5..40));
        let number = self.credit_number(supplier);
        let mut m = self.base(tenant, supplier, DocumentType::CreditNote, &number, date);
        if self.chance(0.95) {
            let cited = self.cited(&inv_no);
            m.insert("invoice_reference".into(), json!(cited));
        }
        let credited: Vec<Line> = if self.chance(0.5) {
            lines
        } else {
            vec![Line {
                quantity: (lines[0].quantity / 5).max(1),
                ..lines[0].clone()
            }]
        };
        self.with_lines(&mut m, &credited, true);
        if let Some(total) = m.get("total").and_then(Value::as_f64) {
            m.insert("total".into(), json!(-total));
        }
        let cn = self.push(
            tenant,
            case,
            Scenario::CreditNote,
            DocumentType::CreditNote,
            Value::Object(m),
        );
        self.link(cn, inv);
    }

    /// PO, delivery note, and an invoice citing nothing: only supplier, total, date and
    /// lines connect it.
    pub(super) fn no_references(&mut self, tenant: usize) {
        let case = self.case();
        let scenario = Scenario::NoReferences;
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &po_no,
            day(d0),
            &lines,
        );
        let d1 = d0 + self.rng.random_range(2..10);
        let dn_no = self.supplier_number(supplier, true);
        let dn = self.delivery_note(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &dn_no,
            Some(&po_no),
            day(d1),
            &lines,
        );
        let inv_no = self.supplier_number(supplier, false);
        let d2 = d1 + self.rng.random_range(0..5);
        let inv = self.invoice(
            Purchase {
                tenant,
                case,
                scenario,
                supplier,
            },
            &inv_no,
            None,
            &[],
            day(d2),
            &lines,
        );
        self.link(po, dn);
        self.link(po, inv);
        self.link(dn, inv);
    }

    /// An order under the supplier's name, and its delivery note under the supplier's
    /// new name, citing nothing, without VAT id.
    pub(super) fn renamed_supplier(&mut self, tenant: usize) {
        let case = self.case();
        let supplier = self.supplier(tenant);
        let p = Purchase {
            tenant,
            case,
            scenario: Scenario::RenamedSupplier,
            supplier,
        };
        let lines = self.lines(supplier);
        let d0 = self.start();
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(p, &po_no, day(d0), &lines);
        let d1 = d0 + self.rng.random_range(2..10);
        let dn_no = self.supplier_number(supplier, true);
        let dn = self.delivery_note(p, &dn_no, None, day(d1), &lines);
        if let Value::Object(m) = &mut self.documents[dn].data {
            m.insert("supplier_name".into(), json!(NEW_NAMES[supplier]));
            m.remove("supplier_vat_id");
        }
        self.link(po, dn);
    }

    /// The purchases of [`Mix::Full`] by a roll of 0–99: the classic ones in about the
    /// classic proportions, and the ones only the full mix has.
    pub(super) fn full_mix(&mut self, tenant: usize, roll: u32) {
        match roll {
            0..22 => {
                self.simple(tenant, Scenario::Simple);
            }
            22..32 => self.standing_order(tenant),
            32..41 => self.partial_deliveries(tenant),
            41..47 => self.final_invoice(tenant),
            47..54 => self.split_invoices(tenant),
            54..61 => self.credit_note(tenant),
            61..67 => self.no_references(tenant),
            67..73 => self.lone(tenant),
            73..76 => self.framework_order(tenant),
            76..83 => self.messy_references(tenant),
            83..88 => self.look_alike_suppliers(tenant),
            88..94 => self.sparse_fields(tenant),
            94..97 => self.re_extraction(tenant),
            _ => self.injected_instructions(tenant),
        }
    }

    /// One order for 6–12 months of the same goods; a delivery note each month (citing
    /// the order, 92 %) and an invoice a few days later (citing the order 95 %, its
    /// delivery note 50 %). Most months deliver the same quantity.
    pub(super) fn framework_order(&mut self, tenant: usize) {
        let case = self.case();
        let supplier = self.supplier(tenant);
        let p = Purchase {
            tenant,
            case,
            scenario: Scenario::FrameworkOrder,
            supplier,
        };
        let monthly = self.lines(supplier);
        let months = self.rng.random_range(6..=12u32);
        let ordered: Vec<Line> = monthly
            .iter()
            .map(|l| Line {
                quantity: l.quantity * months,
                ..l.clone()
            })
            .collect();
        let d0 = self.rng.random_range(0..60);
        let po_no = self.po_number(tenant);
        let po = self.purchase_order(p, &po_no, day(d0), &ordered);
        for month in 0..months as u64 {
            let delivered: Vec<Line> = if self.chance(0.8) {
                monthly.clone()
            } else {
                monthly
                    .iter()
                    .map(|l| Line {
                        quantity: self.rng.random_range(1..=40) * 5,
                        ..l.clone()
                    })
                    .collect()
            };
            let d1 = d0 + 30 * (month + 1) + self.rng.random_range(0..5);
            let dn_no = self.supplier_number(supplier, true);
            let dn = self.delivery_note(p, &dn_no, Some(&po_no), day(d1), &delivered);
            let d2 = d1 + self.rng.random_range(1..6);
            let inv_no = self.supplier_number(supplier, false);
            let cite_po = self.chance(0.95);
            let dns = if self.chance(0.5) {
                vec![dn_no]
            } else {
                vec![]
            };
            let inv = self.invoice(
                p,
                &inv_no,
                cite_po.then_some(po_no.as_str()),
                &dns,
                day(d2),
                &delivered,
            );
            self.link(po, dn);
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// A simple purchase whose citations (and 30 % of own numbers) are printed in
    /// another shape: digit groups run together or split, an OCR letter next to a
    /// separator.
    pub(super) fn messy_references(&mut self, tenant: usize) {
        self.messy = true;
        self.simple(tenant, Scenario::MessyReferences);
        self.messy = false;
    }

    /// The two suppliers of one name with different VAT ids, made once.
    pub(super) fn twins(&mut self) -> (usize, usize) {
        if let Some(twins) = self.twins {
            return twins;
        }
        let mut made = Vec::new();
        for spec in &TWIN_SUPPLIERS {
            self.suppliers.push(Supplier {
                spec,
                vat_id: format!(
                    "DE{}",
                    100_000_000 + self.rng.random_range(0..899_999_999u32)
                ),
                iban: format!(
                    "DE{:02}{:08}{:010}",
                    90 + made.len(),
                    self.rng.random_range(10_000_000..99_999_999u32),
                    self.rng.random_range(0..9_999_999_999u64)
                ),
                next_invoice: self.rng.random_range(1..5_000),
                next_dn: self.rng.random_range(1..5_000),
            });
            made.push(self.suppliers.len() - 1);
        }
        let twins = (made[0], made[1]);
        self.twins = Some(twins);
        twins
    }

    /// Two companies of one name ("Müller GmbH", "Mueller GmbH": both `mueller`), other
    /// VAT ids, each with a purchase of the same goods within a few days; their delivery
    /// notes carry no VAT id.
    pub(super) fn look_alike_suppliers(&mut self, tenant: usize) {
        let (a, b) = self.twins();
        let lines = self.lines(a);
        let d0 = self.start();
        for (k, supplier) in [a, b].into_iter().enumerate() {
            let case = self.case();
            let p = Purchase {
                tenant,
                case,
                scenario: Scenario::LookAlikeSuppliers,
                supplier,
            };
            let start = d0 + k as u64 * self.rng.random_range(0..4);
            let po_no = self.po_number(tenant);
            let po = self.purchase_order(p, &po_no, day(start), &lines);
            let d1 = start + self.rng.random_range(2..8);
            let dn_no = self.supplier_number(supplier, true);
            let dn = self.delivery_note(p, &dn_no, Some(&po_no), day(d1), &lines);
            if let Value::Object(m) = &mut self.documents[dn].data {
                m.remove("supplier_vat_id");
            }
            let d2 = d1 + self.rng.random_range(0..6);
            let inv_no = self.supplier_number(supplier, false);
            let dns = if self.chance(0.6) {
                vec![dn_no]
            } else {
                vec![]
            };
            let inv = self.invoice(p, &inv_no, Some(&po_no), &dns, day(d2), &lines);
            self.link(po, dn);
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// A simple purchase with gaps: half in another currency (all three documents), and
    /// each document without supplier name (30 %) or without date (25 %).
    pub(super) fn sparse_fields(&mut self, tenant: usize) {
        let (_, _, po, dn, inv, _, _) = self.simple(tenant, Scenario::SparseFields);
        let currency = if self.chance(0.5) {
            Some(["CHF", "USD", "GBP", "PLN"][self.rng.random_range(0..4)])
        } else {
            None
        };
        for doc in [po, dn, inv] {
            let no_name = self.chance(0.3);
            let no_date = self.chance(0.25);
            if let Value::Object(m) = &mut self.documents[doc].data {
                if let Some(c) = currency {
                    m.insert("currency".into(), json!(c));
                }
                if no_name {
                    m.remove("supplier_name");
                }
                if no_date {
                    m.remove("invoice_date");
                }
            }
        }
    }

    /// A simple purchase whose invoice is first extracted wrong: another order's number
    /// (the tenant's next), no delivery note, no lines, another total. The runner
    /// re-extracts it (the true data) once a run has claimed the wrong one.
    pub(super) fn re_extraction(&mut self, tenant: usize) {
        let (_, _, _, _, inv, _, _) = self.simple(tenant, Scenario::ReExtraction);
        let other_po = {
            let n = self.next_po[tenant] + 1;
            match tenant % 3 {
                0 => format!("PO-2024-{n:04}"),
                1 => format!("45{n:08}"),
                _ => format!("B2024/{n:04}"),
            }
        };
        let mut first = self.documents[inv].data.clone();
        if let Value::Object(m) = &mut first {
            m.insert("po_reference".into(), json!(other_po));
            m.remove("delivery_note_reference");
            m.remove("line_items");
            let total = m.get("total").and_then(Value::as_f64).unwrap_or(100.0);
            m.insert("total".into(), json!(round2(total * 1.37)));
            m.insert("confidence".into(), json!("medium"));
        }
        self.re_extractions.push((inv, first));
    }

    /// Two purchases of the same supplier, goods and week; the first's invoice cites
    /// nothing and carries a line telling the reader to link all candidates.
    pub(super) fn injected_instructions(&mut self, tenant: usize) {
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        for k in 0..2u64 {
            let case = self.case();
            let p = Purchase {
                tenant,
                case,
                scenario: Scenario::InjectedInstructions,
                supplier,
            };
            let start = d0 + k * self.rng.random_range(1..4);
            let po_no = self.po_number(tenant);
            let po = self.purchase_order(p, &po_no, day(start), &lines);
            let d1 = start + self.rng.random_range(2..6);
            let dn_no = self.supplier_number(supplier, true);
            let dn = self.delivery_note(p, &dn_no, Some(&po_no), day(d1), &lines);
            let d2 = d1 + self.rng.random_range(0..4);
            let inv_no = self.supplier_number(supplier, false);
            let inv = if k == 0 {
                let inv = self.invoice(p, &inv_no, None, &[], day(d2), &lines);
                if let Some(items) = self.documents[inv]
                    .data
                    .get_mut("line_items")
                    .and_then(Value::as_array_mut)
                {
                    items.push(json!({"description": INJECTED_INSTRUCTION, "quantity": 1}));
                }
                inv
            } else {
                self.invoice(p, &inv_no, Some(&po_no), &[dn_no], day(d2), &lines)
            };
            self.link(po, dn);
            self.link(po, inv);
            self.link(dn, inv);
        }
    }

    /// An invoice for a service without an order, or an order not delivered yet.
    pub(super) fn lone(&mut self, tenant: usize) {
        let case = self.case();
        let supplier = self.supplier(tenant);
        let lines = self.lines(supplier);
        let d0 = self.start();
        if self.chance(0.5) {
            let inv_no = self.supplier_number(supplier, false);
            self.invoice(
                Purchase {
                    tenant,
                    case,
                    scenario: Scenario::Lone,
                    supplier,
                },
                &inv_no,
                None,
                &[],
                day(d0),
                &lines,
            );
        } else {
            let po_no = self.po_number(tenant);
            self.purchase_order(
                Purchase {
                    tenant,
                    case,
                    scenario: Scenario::Lone,
                    supplier,
                },
                &po_no,
                day(d0),
                &lines,
            );
        }
    }
}
