"""The structured configs of the config groups beside the root schema: the data options, the model backends beyond LightGBM, and ltr's Optuna sweeper."""
