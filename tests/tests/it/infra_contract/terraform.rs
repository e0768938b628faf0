//! Just enough of Terraform's evaluation to check `infra/` before anything is applied.
//!
//! Files are parsed with `hcl-rs`. A variable takes the value given to it (a module
//! argument, or for the root module `environments/example.tfvars`), else its default;
//! locals are resolved in dependency order; the handful of Terraform functions that the
//! configuration uses are provided. What Terraform only knows after `apply` (a resource
//! attribute, a data source, a module output) evaluates to its own reference text, e.g.
//! `"${aws_sqs_queue.dlq.arn}"`, so a check can still see where a value comes from. An
//! expression that cannot be evaluated at all (a function not provided here, such as
//! `filebase64sha256`) is kept as its source text in the same `${…}` form.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use hcl::eval::{Context, Evaluate, FuncArgs, FuncDef, ParamType};
use hcl::expr::{Operation, TraversalOperator};
use hcl::template::{Directive, Element, Template};
use hcl::{Attribute, Block, Body, Expression, Map, Structure, Value};

/// The module every SQS-triggered function is an instance of.
pub const QUEUE_FUNCTION_MODULE: &str = "./modules/queue-function";

/// The example environment that gives the root variables without defaults a value.
const EXAMPLE_TFVARS: &str = "environments/example.tfvars";

/// Roots of references that Terraform resolves itself; every other root (`aws_*`,
/// `data`, `module`) is only known after `apply`.
const KNOWN_ROOTS: &[&str] = &["var", "local", "path", "each", "count", "self", "terraform"];

/// The text of the files of an `infra/` directory, by path relative to it.
#[derive(Clone, Debug)]
pub struct Sources {
    files: BTreeMap<String, String>,
}

impl Sources {
    /// Reads `*.tf` of the root and of each module under `modules/`, and the example
    /// tfvars.
    pub fn read(infra_dir: &Path) -> Sources {
        let mut files = BTreeMap::new();
        let mut add_dir = |dir: &Path, prefix: &str| {
            for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}")) {
                let path = entry.expect("directory entry").path();
                if path.extension().is_some_and(|ext| ext == "tf") {
                    let name = path.file_name().unwrap().to_string_lossy();
                    let text = fs::read_to_string(&path).expect("read .tf file");
                    files.insert(format!("{prefix}{name}"), text);
                }
            }
        };
        add_dir(infra_dir, "");
        for module in fs::read_dir(infra_dir.join("modules")).expect("read infra/modules") {
            let module = module.expect("directory entry").path();
            let name = module.file_name().unwrap().to_string_lossy().into_owned();
            add_dir(&module, &format!("modules/{name}/"));
        }
        let tfvars = fs::read_to_string(infra_dir.join(EXAMPLE_TFVARS)).expect("read tfvars");
        files.insert(EXAMPLE_TFVARS.to_string(), tfvars);
        Sources { files }
    }

    /// A copy with `from` replaced by `to` in `file`. Panics unless `from` occurs exactly
    /// once, so a test that breaks a copy cannot silently break nothing.
    pub fn replace(mut self, file: &str, from: &str, to: &str) -> Sources {
        let text = self
            .files
            .get_mut(file)
            .unwrap_or_else(|| panic!("no file {file} in infra/"));
        let count = text.matches(from).count();
        assert_eq!(
            count, 1,
            "{from:?} occurs {count} times in {file}, expected once"
        );
        *text = text.replacen(from, to, 1);
        self
    }

    /// A copy with `text` appended to `file` (which is created if missing).
    pub fn append(mut self, file: &str, text: &str) -> Sources {
        self.files
            .entry(file.to_string())
            .or_default()
            .push_str(text);
        self
    }

    fn bodies(&self, dir: &str) -> Result<Vec<Body>, String> {
        self.files
            .iter()
            .filter(|(path, _)| {
                path.ends_with(".tf")
                    && path
                        .strip_prefix(dir)
                        .is_some_and(|rest| !rest.contains('/'))
            })
            .map(|(path, text)| hcl::parse(text).map_err(|e| format!("{path}: {e}")))
            .collect()
    }

    fn example_tfvars(&self) -> Result<Map<String, Value>, String> {
        let text = self.files.get(EXAMPLE_TFVARS).map_or("", String::as_str);
        let body = hcl::parse(text).map_err(|e| format!("{EXAMPLE_TFVARS}: {e}"))?;
        let ctx = base_context(&[]);
        Ok(body
            .attributes()
            .map(|attr| (attr.key().to_string(), evaluate(attr.expr(), &ctx)))
            .collect())
    }
}

/// One `resource` or `data` block after evaluation.
#[derive(Clone, Debug)]
pub struct Resource {
    /// `aws_sqs_queue.dlq` or `data.aws_iam_policy_document.permissions`.
    pub address: String,
    /// The resource type, e.g. `aws_sqs_queue`.
    pub kind: String,
    /// The body with every expression evaluated as far as possible and every `dynamic`
    /// block expanded into the blocks it generates.
    pub body: Body,
}

impl Resource {
    /// The value of an attribute of the body, `None` when it is not set.
    pub fn attr(&self, key: &str) -> Option<Value> {
        attr(&self.body, key)
    }
}

/// A `module` block of the root module, with its arguments evaluated.
#[derive(Clone, Debug)]
pub struct ModuleCall {
    pub name: String,
    pub source: String,
    pub args: Map<String, Value>,
}

/// A module evaluated with concrete inputs: the root module, or one instance of a child
/// module.
#[derive(Clone, Debug)]
pub struct Module {
    /// `root` or `module.<name>`.
    pub address: String,
    /// The value of every declared variable.
    pub vars: Map<String, Value>,
    /// Resources and data sources, except those with `count = 0` or an empty `for_each`.
    pub resources: Vec<Resource>,
    pub calls: Vec<ModuleCall>,
}

impl Module {
    /// Resources of one type.
    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Resource> + 'a {
        self.resources.iter().filter(move |r| r.kind == kind)
    }

    /// The resource with this address (`aws_sqs_queue.dlq`), if any.
    pub fn resource(&self, address: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.address == address)
    }
}

/// The whole of `infra/`: the root module and every instance of the queue-function module.
#[derive(Clone, Debug)]
pub struct Infra {
    pub root: Module,
    pub instances: Vec<Module>,
    root_bodies: Vec<Body>,
    root_inputs: Map<String, Value>,
    module_bodies: Vec<Body>,
}

impl Infra {
    pub fn evaluate(sources: &Sources) -> Result<Infra, String> {
        Ok(Infra::from_bodies(
            sources.bodies("")?,
            sources.example_tfvars()?,
            sources.bodies("modules/queue-function/")?,
        ))
    }

    fn from_bodies(
        root_bodies: Vec<Body>,
        root_inputs: Map<String, Value>,
        module_bodies: Vec<Body>,
    ) -> Infra {
        let root = evaluate_module("root", &root_bodies, &root_inputs);
        let instances = root
            .calls
            .iter()
            .filter(|call| call.source == QUEUE_FUNCTION_MODULE)
            .map(|call| {
                evaluate_module(&format!("module.{}", call.name), &module_bodies, &call.args)
            })
            .collect();
        Infra {
            root,
            instances,
            root_bodies,
            root_inputs,
            module_bodies,
        }
    }

    /// The whole of `infra/` evaluated again with some root variables changed (as if the
    /// tfvars set them), to see which attributes, in the root and in every instance,
    /// follow a root variable.
    pub fn with_root_inputs(&self, changed: &[(&str, Value)]) -> Infra {
        let mut inputs = self.root_inputs.clone();
        for (name, value) in changed {
            inputs.insert(name.to_string(), value.clone());
        }
        Infra::from_bodies(self.root_bodies.clone(), inputs, self.module_bodies.clone())
    }

    /// `instance` evaluated again with some of its inputs changed, to see which
    /// attributes follow an input.
    pub fn with_inputs(&self, instance: &Module, changed: &[(&str, Value)]) -> Module {
        let mut inputs = instance.vars.clone();
        for (name, value) in changed {
            inputs.insert(name.to_string(), value.clone());
        }
        evaluate_module(&instance.address, &self.module_bodies, &inputs)
    }

    /// The root module and every instance.
    pub fn modules(&self) -> impl Iterator<Item = &Module> {
        std::iter::once(&self.root).chain(&self.instances)
    }
}

/// The value of an attribute of `body`, `None` when it is not set.
pub fn attr(body: &Body, key: &str) -> Option<Value> {
    body.attributes()
        .find(|a| a.key() == key)
        .map(|a| Value::from(a.expr().clone()))
}

/// The nested blocks of `body` with this identifier (expanded `dynamic` blocks included).
pub fn blocks<'a>(body: &'a Body, identifier: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
    body.blocks().filter(move |b| b.identifier() == identifier)
}

/// For a value that is exactly one apply-time reference, its parts:
/// `"${aws_sqs_queue.dlq.arn}"` -> `["aws_sqs_queue", "dlq", "arn"]`.
pub fn reference(value: &Value) -> Option<Vec<&str>> {
    let inner = value.as_str()?.strip_prefix("${")?.strip_suffix('}')?;
    (!inner.contains(['{', '}', ' ', '(', '['])).then(|| inner.split('.').collect())
}

fn evaluate_module(address: &str, bodies: &[Body], given: &Map<String, Value>) -> Module {
    let placeholders = apply_time_placeholders(bodies);
    let top_level = |identifier: &'static str| {
        bodies
            .iter()
            .flat_map(|body| body.blocks())
            .filter(move |b| b.identifier() == identifier)
    };

    let mut vars = Map::new();
    for variable in top_level("variable") {
        let name = label(variable, 0);
        let value = match given.get(&name) {
            Some(value) => value.clone(),
            None => match variable.body().attributes().find(|a| a.key() == "default") {
                Some(default) => evaluate(default.expr(), &base_context(&[])),
                None => Value::String(format!("${{var.{name}}}")),
            },
        };
        vars.insert(name, value);
    }

    let mut ctx = base_context(&placeholders);
    ctx.declare_var("var", Value::Object(vars.clone()));
    let path = Map::from_iter([
        ("module".to_string(), Value::from(".")),
        ("root".to_string(), Value::from(".")),
    ]);
    ctx.declare_var("path", Value::Object(path));
    let locals = resolve_locals(
        top_level("locals").flat_map(|b| b.body().attributes()),
        &ctx,
    );
    ctx.declare_var("local", Value::Object(locals));

    let mut resources = Vec::new();
    for (is_data, block) in top_level("resource")
        .map(|b| (false, b))
        .chain(top_level("data").map(|b| (true, b)))
    {
        if !is_instantiated(block.body(), &ctx) {
            continue;
        }
        let (kind, name) = (label(block, 0), label(block, 1));
        let address = if is_data {
            format!("data.{kind}.{name}")
        } else {
            format!("{kind}.{name}")
        };
        let body = evaluate_body(block.body(), &ctx);
        resources.push(Resource {
            address,
            kind,
            body,
        });
    }

    let calls = top_level("module")
        .map(|block| {
            let args: Map<String, Value> = block
                .body()
                .attributes()
                .map(|a| (a.key().to_string(), evaluate(a.expr(), &ctx)))
                .collect();
            let source = args
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            ModuleCall {
                name: label(block, 0),
                source,
                args,
            }
        })
        .collect();

    Module {
        address: address.to_string(),
        vars,
        resources,
        calls,
    }
}

fn label(block: &Block, index: usize) -> String {
    block
        .labels()
        .get(index)
        .map(|l| l.as_str().to_string())
        .unwrap_or_default()
}

/// Evaluates as far as possible; what stays unevaluated becomes its `${…}` source text.
fn evaluate(expr: &Expression, ctx: &Context) -> Value {
    let mut expr = expr.clone();
    // Errors leave the failing sub-expressions as written, which is what we want.
    let _ = expr.evaluate_in_place(ctx);
    Value::from(expr)
}

/// Locals may refer to each other in any order: evaluate repeatedly until nothing more
/// resolves, then keep the rest as source text.
fn resolve_locals<'a>(
    attributes: impl Iterator<Item = &'a Attribute>,
    ctx: &Context,
) -> Map<String, Value> {
    let mut pending: Vec<&Attribute> = attributes.collect();
    let mut resolved = Map::new();
    loop {
        let mut ctx = ctx.clone();
        ctx.declare_var("local", Value::Object(resolved.clone()));
        let before = pending.len();
        pending.retain(|attr| match attr.expr().evaluate(&ctx) {
            Ok(value) => {
                resolved.insert(attr.key().to_string(), value);
                false
            }
            Err(_) => true,
        });
        if pending.is_empty() || pending.len() == before {
            for attr in pending {
                resolved.insert(attr.key().to_string(), evaluate(attr.expr(), &ctx));
            }
            return resolved;
        }
    }
}

/// `count = 0` and an empty `for_each` mean the resource does not exist; anything
/// unknown counts as existing, so its checks still run.
fn is_instantiated(body: &Body, ctx: &Context) -> bool {
    match attr_expr(body, "count").map(|e| evaluate(e, ctx)) {
        Some(Value::Number(n)) if n.as_u64() == Some(0) => return false,
        Some(Value::Bool(false)) => return false,
        _ => {}
    }
    match attr_expr(body, "for_each").map(|e| evaluate(e, ctx)) {
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(items)) => !items.is_empty(),
        _ => true,
    }
}

fn attr_expr<'a>(body: &'a Body, key: &str) -> Option<&'a Expression> {
    body.attributes()
        .find(|a| a.key() == key)
        .map(Attribute::expr)
}

fn evaluate_body(body: &Body, ctx: &Context) -> Body {
    let mut out = Vec::new();
    for structure in body.iter() {
        match structure {
            Structure::Attribute(attr) => {
                out.push(Structure::Attribute(Attribute::new(
                    attr.key(),
                    evaluate(attr.expr(), ctx),
                )));
            }
            Structure::Block(block) if block.identifier() == "dynamic" => {
                out.extend(expand_dynamic(block, ctx).into_iter().map(Structure::Block));
            }
            Structure::Block(block) => out.push(Structure::Block(Block {
                identifier: block.identifier.clone(),
                labels: block.labels.clone(),
                body: evaluate_body(block.body(), ctx),
            })),
        }
    }
    Body(out)
}

/// `dynamic "x" { for_each = …; content { … } }` becomes one `x` block per element. An
/// unknown `for_each` yields one block, so its content is still checked.
fn expand_dynamic(block: &Block, ctx: &Context) -> Vec<Block> {
    let generated = label(block, 0);
    let iterator = attr_expr(block.body(), "iterator")
        .and_then(|e| match e {
            Expression::Variable(v) => Some(v.to_string()),
            _ => None,
        })
        .unwrap_or_else(|| generated.clone());
    let Some(content) = blocks(block.body(), "content").next() else {
        return Vec::new();
    };
    let items: Vec<(Value, Value)> =
        match attr_expr(block.body(), "for_each").map(|e| evaluate(e, ctx)) {
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::from(i as u64), v))
                .collect(),
            Some(Value::Object(items)) => items
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
            _ => vec![(
                Value::String(format!("${{{iterator}.key}}")),
                Value::String(format!("${{{iterator}.value}}")),
            )],
        };
    items
        .into_iter()
        .map(|(key, value)| {
            let mut ctx = ctx.clone();
            let each = Map::from_iter([("key".to_string(), key), ("value".to_string(), value)]);
            ctx.declare_var(iterator.as_str(), Value::Object(each));
            Block {
                identifier: generated.as_str().into(),
                labels: Vec::new(),
                body: evaluate_body(content.body(), &ctx),
            }
        })
        .collect()
}

// --- apply-time references ----------------------------------------------------------------

/// One object per reference root (`aws_sqs_queue`, `data`, `module`) whose leaves are the
/// references' own text: `aws_sqs_queue.dlq.arn` evaluates to `"${aws_sqs_queue.dlq.arn}"`.
fn apply_time_placeholders(bodies: &[Body]) -> Vec<(String, Value)> {
    let mut paths = BTreeSet::new();
    for body in bodies {
        collect_body(body, &mut paths);
    }
    let mut roots = Map::new();
    for path in &paths {
        insert_placeholder(&mut roots, path, &format!("${{{}}}", path.join(".")));
    }
    roots.into_iter().collect()
}

fn insert_placeholder(object: &mut Map<String, Value>, path: &[String], text: &str) {
    let (first, rest) = path.split_first().expect("non-empty path");
    if rest.is_empty() {
        object
            .entry(first.clone())
            .or_insert_with(|| Value::from(text));
        return;
    }
    let child = object
        .entry(first.clone())
        .or_insert_with(|| Value::Object(Map::new()));
    if !child.is_object() {
        *child = Value::Object(Map::new());
    }
    if let Value::Object(child) = child {
        insert_placeholder(child, rest, text);
    }
}

fn collect_body(body: &Body, paths: &mut BTreeSet<Vec<String>>) {
    for structure in body.iter() {
        match structure {
            Structure::Attribute(attr) => collect_expr(attr.expr(), paths),
            Structure::Block(block) => collect_body(block.body(), paths),
        }
    }
}

fn collect_expr(expr: &Expression, paths: &mut BTreeSet<Vec<String>>) {
    match expr {
        Expression::Traversal(traversal) => {
            if let Expression::Variable(root) = &traversal.expr {
                let root = root.to_string();
                if !KNOWN_ROOTS.contains(&root.as_str()) {
                    let mut path = vec![root];
                    for op in &traversal.operators {
                        match op {
                            TraversalOperator::GetAttr(name) => path.push(name.to_string()),
                            _ => break,
                        }
                    }
                    if path.len() >= 2 {
                        paths.insert(path);
                    }
                }
            }
            collect_expr(&traversal.expr, paths);
            for op in &traversal.operators {
                if let TraversalOperator::Index(index) = op {
                    collect_expr(index, paths);
                }
            }
        }
        Expression::Array(items) => items.iter().for_each(|e| collect_expr(e, paths)),
        Expression::Object(object) => object.values().for_each(|e| collect_expr(e, paths)),
        Expression::TemplateExpr(template) => {
            if let Ok(template) = Template::from_expr(template) {
                collect_template(&template, paths);
            }
        }
        Expression::FuncCall(call) => call.args.iter().for_each(|e| collect_expr(e, paths)),
        Expression::Parenthesis(inner) => collect_expr(inner, paths),
        Expression::Conditional(cond) => {
            for e in [&cond.cond_expr, &cond.true_expr, &cond.false_expr] {
                collect_expr(e, paths);
            }
        }
        Expression::Operation(op) => match op.as_ref() {
            Operation::Unary(op) => collect_expr(&op.expr, paths),
            Operation::Binary(op) => {
                collect_expr(&op.lhs_expr, paths);
                collect_expr(&op.rhs_expr, paths);
            }
        },
        Expression::ForExpr(for_expr) => {
            let parts = [Some(&for_expr.collection_expr), Some(&for_expr.value_expr)];
            let optional = [for_expr.key_expr.as_ref(), for_expr.cond_expr.as_ref()];
            parts
                .into_iter()
                .chain(optional)
                .flatten()
                .for_each(|e| collect_expr(e, paths));
        }
        _ => {}
    }
}

fn collect_template(template: &Template, paths: &mut BTreeSet<Vec<String>>) {
    for element in template.elements() {
        match element {
            Element::Literal(_) => {}
            Element::Interpolation(interpolation) => collect_expr(&interpolation.expr, paths),
            Element::Directive(directive) => match directive.as_ref() {
                Directive::If(d) => {
                    collect_expr(&d.cond_expr, paths);
                    collect_template(&d.true_template, paths);
                    if let Some(t) = &d.false_template {
                        collect_template(t, paths);
                    }
                }
                Directive::For(d) => {
                    collect_expr(&d.collection_expr, paths);
                    collect_template(&d.template, paths);
                }
            },
        }
    }
}

// --- Terraform functions used by infra/ ---------------------------------------------------

fn base_context(placeholders: &[(String, Value)]) -> Context<'static> {
    let mut ctx = Context::new();
    for (root, value) in placeholders {
        ctx.declare_var(root.as_str(), value.clone());
    }
    let one = |f| FuncDef::builder().param(ParamType::Any).build(f);
    let variadic = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func("jsonencode", one(jsonencode));
    ctx.declare_func("tostring", one(tostring));
    ctx.declare_func("length", one(length));
    ctx.declare_func("keys", one(keys));
    ctx.declare_func("values", one(values));
    ctx.declare_func("merge", variadic(merge));
    ctx.declare_func("concat", variadic(concat));
    ctx.declare_func("distinct", one(distinct));
    ctx.declare_func(
        "lookup",
        FuncDef::builder()
            .param(ParamType::Any)
            .param(ParamType::Any)
            .variadic_param(ParamType::Any)
            .build(lookup),
    );
    ctx.declare_func("coalesce", variadic(coalesce));
    ctx.declare_func("min", variadic(min));
    ctx.declare_func("floor", one(floor));
    ctx
}

fn jsonencode(args: FuncArgs) -> Result<Value, String> {
    serde_json::to_string(&args[0])
        .map(Value::from)
        .map_err(|e| e.to_string())
}

fn tostring(args: FuncArgs) -> Result<Value, String> {
    match &args[0] {
        Value::String(s) => Ok(Value::from(s.as_str())),
        Value::Number(n) => Ok(Value::from(n.to_string())),
        Value::Bool(b) => Ok(Value::from(b.to_string())),
        other => Err(format!("tostring: cannot convert {other:?}")),
    }
}

fn length(args: FuncArgs) -> Result<Value, String> {
    match &args[0] {
        Value::Array(items) => Ok(Value::from(items.len() as u64)),
        Value::Object(items) => Ok(Value::from(items.len() as u64)),
        Value::String(s) => Ok(Value::from(s.chars().count() as u64)),
        other => Err(format!("length: not a collection: {other:?}")),
    }
}

/// Terraform iterates maps in lexical key order.
fn sorted_entries(value: &Value) -> Result<Vec<(&String, &Value)>, String> {
    let object = value.as_object().ok_or("expected an object")?;
    let mut entries: Vec<_> = object.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    Ok(entries)
}

fn keys(args: FuncArgs) -> Result<Value, String> {
    let entries = sorted_entries(&args[0])?;
    Ok(Value::Array(
        entries
            .into_iter()
            .map(|(k, _)| Value::from(k.as_str()))
            .collect(),
    ))
}

fn values(args: FuncArgs) -> Result<Value, String> {
    let entries = sorted_entries(&args[0])?;
    Ok(Value::Array(
        entries.into_iter().map(|(_, v)| v.clone()).collect(),
    ))
}

fn merge(args: FuncArgs) -> Result<Value, String> {
    let mut merged = Map::new();
    for arg in args.iter() {
        let object = arg.as_object().ok_or("merge: arguments must be objects")?;
        merged.extend(object.clone());
    }
    Ok(Value::Object(merged))
}

fn concat(args: FuncArgs) -> Result<Value, String> {
    let mut joined = Vec::new();
    for arg in args.iter() {
        joined.extend(
            arg.as_array()
                .ok_or("concat: arguments must be lists")?
                .iter()
                .cloned(),
        );
    }
    Ok(Value::Array(joined))
}

fn distinct(args: FuncArgs) -> Result<Value, String> {
    let items = args[0]
        .as_array()
        .ok_or("distinct: argument must be a list")?;
    let mut kept: Vec<Value> = Vec::new();
    for item in items {
        if !kept.contains(item) {
            kept.push(item.clone());
        }
    }
    Ok(Value::Array(kept))
}

/// `lookup(map, key, default)`. A map known only after apply is no map: the call stays
/// unevaluated.
fn lookup(args: FuncArgs) -> Result<Value, String> {
    let object = args[0]
        .as_object()
        .ok_or("lookup: the first argument must be a map")?;
    let key = args[1].as_str().ok_or("lookup: the key must be a string")?;
    match (object.get(key), args.get(2)) {
        (Some(value), _) => Ok(value.clone()),
        (None, Some(default)) => Ok(default.clone()),
        (None, None) => Err(format!("lookup: no key {key:?} and no default")),
    }
}

/// The first argument that is neither null nor `""`. A reference known only after apply
/// (its `${…}` text) counts as set, as a resource attribute does in Terraform.
fn coalesce(args: FuncArgs) -> Result<Value, String> {
    args.iter()
        .find(|v| !v.is_null() && v.as_str() != Some(""))
        .cloned()
        .ok_or_else(|| "coalesce: every argument is null or empty".to_string())
}

fn min(args: FuncArgs) -> Result<Value, String> {
    args.iter()
        .map(|v| v.as_number().and_then(hcl::Number::as_f64))
        .collect::<Option<Vec<f64>>>()
        .and_then(|numbers| numbers.into_iter().reduce(f64::min))
        .map(Value::from)
        .ok_or_else(|| "min: arguments must be numbers".to_string())
}

fn floor(args: FuncArgs) -> Result<Value, String> {
    let number = args[0]
        .as_number()
        .and_then(hcl::Number::as_f64)
        .ok_or("floor: the argument must be a number")?;
    Ok(Value::from(number.floor()))
}
