"""Metrics from click logs: examination propensities, IPS-weighted NDCG and the exposure report."""
