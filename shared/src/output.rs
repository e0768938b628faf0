//! Document output: the enqueue side (final approval, manual re-export) and the worker
//! steps of the document-output function (seed 002).
