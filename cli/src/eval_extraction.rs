//! `docflow eval extraction DIR`: measure a provider on labelled documents (see
//! `docflow_dev::eval::extraction` for the file layout and the scoring rules).

use std::path::PathBuf;

use anyhow::bail;
use docflow_dev::eval::extraction::{EInvoices, Pricing, evaluate_dir_with};

#[derive(clap::Args)]
pub struct Args {
    /// A directory of documents (.pdf, .txt, .png, .jpg, .xml), each with `<name>.json` beside
    /// it holding the expected fields under the extraction contract's names.
    dir: PathBuf,
    /// `rules` works offline; `anthropic` / `openai` read ANTHROPIC_API_KEY /
    /// OPENAI_API_KEY and the LLM_* settings (LLM_MODEL, LLM_BASE_URL, …).
    #[arg(long, default_value = "rules", value_parser = ["rules", "anthropic", "openai"])]
    provider: String,
    /// Print the whole report as JSON.
    #[arg(long)]
    json: bool,
    /// USD per million input tokens (default: the list price of a few known models).
    #[arg(long, requires = "price_output")]
    price_input: Option<f64>,
    /// USD per million output tokens.
    #[arg(long, requires = "price_input")]
    price_output: Option<f64>,
    /// Exit with an error when overall accuracy is below this percentage (for CI).
    #[arg(long)]
    min_accuracy: Option<f64>,
    /// Read hybrid PDFs (ZUGFeRD / Factur-X) from their page only, as if their XML were
    /// stripped: measures the page path on them, labelled by their XML.
    #[arg(long)]
    page_only: bool,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let extractor = crate::extract::extractor(&args.provider)?;
    let pricing = match (args.price_input, args.price_output) {
        (Some(input), Some(output)) => Some(Pricing {
            input_per_mtok: input,
            output_per_mtok: output,
        }),
        _ => None,
    };
    let einvoices = if args.page_only {
        EInvoices::PageOnly
    } else {
        EInvoices::Read
    };
    let report =
        evaluate_dir_with(&args.dir, &args.provider, &extractor, pricing, einvoices).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    if let Some(min) = args.min_accuracy
        && 100.0 * report.accuracy() < min
    {
        bail!(
            "accuracy {:.1} % is below --min-accuracy {min} %",
            100.0 * report.accuracy()
        );
    }
    Ok(())
}
