"""spark-submit entry scripts: each parses its arguments and hands over to the layers below."""
