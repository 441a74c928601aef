"""BoundedMinMaxScaler: reads nothing but the shape when bounds are declared."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import MinMaxScaler

from skdp import PrivacyLeakWarning
from skdp.preprocessing import BoundedMinMaxScaler


def test_declared_bounds_scale_and_clip():
    X = np.array([[-5.0, 0.0], [5.0, 50.0], [20.0, 120.0]])
    scaler = BoundedMinMaxScaler(bounds=([0, 0], [10, 100]), feature_range=(-1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PrivacyLeakWarning
        Xt = scaler.fit_transform(X)
    np.testing.assert_allclose(Xt, [[-1, -1], [0, 0], [1, 1]])
    np.testing.assert_allclose(
        scaler.inverse_transform(Xt), [[0, 0], [5, 50], [10, 100]]
    )
    assert not scaler.bounds_from_data_
    unclipped = BoundedMinMaxScaler(bounds=(0, 10), clip=False).fit(X)
    np.testing.assert_allclose(unclipped.transform(X)[:, 0], [-0.5, 0.5, 2.0])


def test_fit_reads_nothing_but_the_number_of_features():
    # Two datasets of the same width give identical fitted scalers.
    rng = np.random.default_rng(0)
    a = BoundedMinMaxScaler(bounds=(0, 1)).fit(rng.normal(size=(10, 3)))
    b = BoundedMinMaxScaler(bounds=(0, 1)).fit(rng.normal(size=(500, 3)) * 1e6)
    for name in ("lower_", "upper_", "scale_", "min_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_default_reads_the_data_like_minmaxscaler_and_warns():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    with pytest.warns(PrivacyLeakWarning, match="bounds was not given"):
        scaler = BoundedMinMaxScaler().fit(X)
    assert scaler.bounds_from_data_
    np.testing.assert_allclose(
        scaler.transform(X), MinMaxScaler().fit_transform(X), atol=1e-12
    )


@pytest.mark.parametrize(
    "params, match",
    [
        ({"bounds": (1, 0)}, "lower < upper"),
        ({"bounds": (0, np.inf)}, "finite"),
        ({"bounds": ([0, 0], [1, 1, 1])}, "each of the 2 features"),
        ({"bounds": (0, 1, 2)}, "pair"),
        ({"bounds": (0, 1), "feature_range": (1, 0)}, "min < max"),
        ({"bounds": (-1e300, 1e300)}, "refused"),
    ],
)
def test_bad_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        BoundedMinMaxScaler(**params).fit(np.zeros((3, 2)))


def test_pandas_output_and_column_transformer():
    df = pd.DataFrame({"age": [20.0, 50.0, 95.0], "hours": [10.0, 40.0, 99.0]})
    scaler = BoundedMinMaxScaler(bounds=([17, 1], [90, 99])).set_output(
        transform="pandas"
    )
    out = scaler.fit_transform(df)
    assert list(out.columns) == ["age", "hours"]
    assert out["age"].max() == 1.0
    ct = ColumnTransformer([("scale", BoundedMinMaxScaler(bounds=(0, 100)), ["age"])])
    ct.set_output(transform="pandas")
    assert list(ct.fit_transform(df).columns) == ["scale__age"]


def test_a_dask_fit_reads_no_row_in_the_client(dask_sync, largest_task_rows):
    # It used to gather the whole dask array into the client (validate_data)
    # and lost a dask DataFrame's column names.
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(np.random.default_rng(2).normal(size=(3000, 2)))
    frame.columns = ["age", "hours"]
    frame.iloc[5, 1] = np.nan  # passes through, as in memory
    memory = BoundedMinMaxScaler(bounds=(-1, 1)).fit(frame)
    with largest_task_rows() as seen:
        on_dask = BoundedMinMaxScaler(bounds=(-1, 1)).fit(
            dd.from_pandas(frame, npartitions=3)
        )
    assert 0 < seen.rows <= 1024
    assert list(on_dask.feature_names_in_) == ["age", "hours"]
    for name in ("lower_", "upper_", "scale_", "min_", "n_features_in_"):
        np.testing.assert_array_equal(getattr(on_dask, name), getattr(memory, name))


def test_dask_input_is_refused_as_memory_input_is(dask_sync, assert_same_refusal):
    da = pytest.importorskip("dask.array")
    X = np.zeros((3000, 2))
    X[2500, 1] = np.inf

    def fit(data, budget):
        BoundedMinMaxScaler(bounds=(0, 1)).fit(data)

    kind, message = assert_same_refusal(fit, X, da.from_array(X, chunks=1000))
    assert kind is ValueError and "infinity" in message
    # Bounds are never read from dask data.
    with pytest.raises(ValueError, match="needs declared bounds"):
        BoundedMinMaxScaler().fit(da.from_array(np.zeros((10, 2)), chunks=5))
