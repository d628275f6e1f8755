"""Names of any length (issue 56): ``tracking.run_name`` is checked before any work (length,
control characters), and no figure depends on a name fitting: a title of any length is cut to a
few lines, and the axes keep their height."""

from __future__ import annotations

import io

import numpy as np
import pytest

from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.names import MAX_RUN_NAME, check_run_name
from ltr.metrics import idcg_report, per_query_table
from ltr.metrics.plots import MIN_TOP, TITLE_LINES, plot_idcg_histogram, title_top, wrap_title
from tests.conftest import compose_train


def test_a_run_name_is_checked_before_any_work() -> None:
    check_run_name(None)
    check_run_name("x" * MAX_RUN_NAME)
    with pytest.raises(LtrUserError, match=rf"tracking.run_name is 1,000 characters long \(x{{20}}\.\.\.\): at most {MAX_RUN_NAME}"):
        check_run_name("x" * 1000)
    with pytest.raises(LtrUserError, match=r"has a control character \('\\x1b'\)"):
        check_run_name("b\x1b]0;PWNED\x07")
    with pytest.raises(LtrUserError, match="at most 250"):
        check_config(compose_train([f"tracking.run_name={'y' * 251}"]))
    assert check_config(compose_train([f"tracking.run_name={'y' * 250}"])).config.tracking.run_name == "y" * 250


@pytest.mark.parametrize("length", [1, 60, 1000, 100_000])
def test_figures_draw_a_name_of_any_length(length: int) -> None:
    """The IDCG histogram of ``ltr train`` with a name of ``length`` characters (1000 crashed it:
    ``bottom cannot be >= top``) renders and saves."""
    pytest.importorskip("matplotlib")
    labels = np.array([0, 1, 2, 1, 0, 0])
    table = per_query_table(labels, np.arange(6.0), np.array([0, 2, 6]), np.array([1, 2]), ks=[5])
    title = f"{'x' * length}\nvalid: IDCG@5 per query"
    shown = wrap_title(title, 6.4, left=0.11, right=0.97)
    assert shown.count("\n") + 1 <= TITLE_LINES + 1
    assert shown.endswith("\nvalid: IDCG@5 per query")
    fig = plot_idcg_histogram(idcg_report(table, 5), title=title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    assert buffer.tell() > 1000
    assert fig.subplotpars.top > fig.subplotpars.bottom


def test_title_top_never_leaves_the_axes_without_height() -> None:
    assert title_top("a\nb", 4.0) > MIN_TOP
    assert title_top("\n".join(["line"] * 50), 4.0) == MIN_TOP
