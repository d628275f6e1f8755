"""The local sqlite store: its lock, template, migrations, moved stores, finished runs read without MLflow, and the paths no output may take."""
