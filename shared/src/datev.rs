//! The DATEV connector: booking proposals through the Maesn API.
