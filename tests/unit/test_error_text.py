"""TensorFlow's errors as one line: what went wrong, without the plumbing around it."""

from __future__ import annotations

from pipediag.errors import tf_error_text


def test_a_trace_error_gives_its_last_line_not_autographs_heading() -> None:
    # GIVEN the error a map's function raises while tf.data traces it on a batch
    error = ValueError(
        "in user code:\n\n"
        '    File "train.py", line 4, in decode_one  *\n'
        "        return tf.io.parse_single_example(r, SPEC)\n\n"
        "    ValueError: Input serialized must be a scalar\n"
    )

    assert tf_error_text(error) == "ValueError: Input serialized must be a scalar"


def test_an_iterator_error_keeps_only_what_the_function_said() -> None:
    error = RuntimeError(
        "{{function_node __wrapped__IteratorGetNext}} Error in user-defined function passed to "
        "MapDataset:10 transformation with iterator: Iterator::Root::Map: Incompatible shapes: "
        "[4] vs. [16]\n\t [[{{node add}}]]"
    )

    assert tf_error_text(error) == "Incompatible shapes: [4] vs. [16]"
