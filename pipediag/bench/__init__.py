"""TensorFlow-side measurement: the pipeline benchmarked alone (TF imported lazily)."""
