"""Estimation: the samplers, the LLC and its diagnostics, calibration, exact references and the backends."""
