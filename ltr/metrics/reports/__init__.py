"""Reports that explain metric values: the IDCG distribution, the gap to LightGBM's NDCG, cut-off checks and label audits."""
