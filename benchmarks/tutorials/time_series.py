"""Time series forecasting: Dense or LSTM on weather CSV windows (timeseries_dataset_from_array).

Source: tensorflow/docs site/en/tutorials/structured_data/time_series.ipynb
    @ 7c3650212740204359d4ceae481abc79345541be
    (https://www.tensorflow.org/tutorials/structured_data/time_series)
License: Apache-2.0, Copyright 2019 The TensorFlow Authors
Split: tune
Changes:
- the download of jena_climate_2009_2016.csv replaced by a generated CSV of the same 15 columns
  ("Date Time" as dd.mm.YYYY HH:MM:SS and the 14 features), one row per 10 minutes: yearly
  and daily periodic temperature plus AR(1) noise, the other columns derived from it as the
  physics goes (vapour pressures, dew point, density...), wind speed and direction with a few
  -9999 errors as in the original;
- scaled: 1 year of records (52,560 rows, 8,760 hourly after `df[5::6]`) instead of 8 years
  (420,551 rows), so 191-192 training steps of 32 per epoch; MAX_EPOCHS 6 instead of 20
  (EarlyStopping's patience=2 kept) so that a plain run (either model) takes
  ~30-45 s on 2 cores; `--max-epochs` sets the cap;
- pandas is not installed here: the notebook's DataFrame steps (read_csv, the [5::6] slice,
  pop, the wind vectors, the time-of-day signals, the 70/20/10 split, the normalisation with
  the training mean and std) are done on a dict of NumPy columns in the same order, and
  `WindowGenerator` takes the column names from that dict;
- of the notebook's models, `--model dense` (default) trains the single-output `dense` on
  `single_step_window` and `--model lstm` trains `lstm_model` on `wide_window`, both through
  `compile_and_fit`; the baselines, the other models, the plots and the evaluations dropped;
- the truth's switch: `_truth.training_dataset(...)` around `window.train` in
  `compile_and_fit`, `_truth.callbacks()` in fit; inert unless PIPEDIAG_TRUTH is set;
  `fit` prints one line per epoch (verbose=2);
- a hand-tuned variant (`PIPEDIAG_TUNED=1`, for the prescription's truth): the windows made
  once in order (`shuffle=False, batch_size=None`), cached, shuffled anew each epoch over all
  of them and batched by 32, the window split in a parallel map, then prefetch (until
  2026-12-07 only the split in a parallel map and prefetch, which gained 0.96-1.00x);
  `_truth.training_dataset(tuned=...)` builds it from `window.train`.
"""

from __future__ import annotations

import argparse
import os

import _truth
import numpy as np
import tensorflow as tf

SPLIT = "tune"
STYLE = "keras-fit"
TUNED_CHANGE = (
    "the windows made in order, cached, shuffled anew each epoch and batched; the split in a "
    "parallel map, then prefetch(AUTOTUNE)"
)
TUNED_FIX = "cache"
VARIANTS = {"dense": ["--model", "dense"], "lstm": ["--model", "lstm"]}

DATA_DIR = "/tmp/pipediag-corpus/time_series"
RECORDS = 365 * 24 * 6  # one year of 10-minute records

COLUMNS = [
    "Date Time",
    "p (mbar)",
    "T (degC)",
    "Tpot (K)",
    "Tdew (degC)",
    "rh (%)",
    "VPmax (mbar)",
    "VPact (mbar)",
    "VPdef (mbar)",
    "sh (g/kg)",
    "H2OC (mmol/mol)",
    "rho (g/m**3)",
    "wv (m/s)",
    "max. wv (m/s)",
    "wd (deg)",
]


def ar1(rng, n, phi, sd):
    """An AR(1) series with stationary standard deviation `sd`."""
    shocks = rng.normal(0.0, sd * np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + shocks[i]
    return out


def generate_climate_csv(csv_path, n=RECORDS, seed=0):
    """jena_climate_2009_2016.csv's columns, made once and reused (replaces the download)."""
    if os.path.exists(csv_path):
        return
    rng = np.random.default_rng(seed)
    start = np.datetime64("2009-01-01T00:10:00")
    times = start + np.arange(n) * np.timedelta64(10, "m")
    t = np.arange(n) * 600.0
    day, year = 24 * 60 * 60, 365.2425 * 24 * 60 * 60
    yearly = -np.cos(2 * np.pi * t / year)  # coldest in January
    daily = -np.cos(2 * np.pi * (t - 3 * 3600) / day)  # coldest before dawn

    T = 9.5 + 9.0 * yearly + 4.0 * daily + ar1(rng, n, 0.999, 3.0) + rng.normal(0, 0.1, n)
    p = 989.0 + ar1(rng, n, 0.9995, 8.0) + rng.normal(0, 0.05, n)
    rh = np.clip(76.0 - 14.0 * daily + ar1(rng, n, 0.995, 10.0), 15.0, 100.0)
    VPmax = 6.1078 * np.exp(17.27 * T / (T + 237.3))
    VPact = rh / 100.0 * VPmax
    VPdef = VPmax - VPact
    g = np.log(VPact / 6.1078)
    Tdew = 237.3 * g / (17.27 - g)
    Tpot = (T + 273.15) * (1000.0 / p) ** 0.286
    sh = 622.0 * VPact / (p - 0.378 * VPact)
    H2OC = 1000.0 * VPact / p
    rho = p * 100.0 / (287.05 * (T + 273.15)) * 1000.0
    wv = np.abs(2.0 + ar1(rng, n, 0.98, 1.5))
    max_wv = wv * rng.uniform(1.2, 2.0, n)
    wd = (220.0 + ar1(rng, n, 0.99, 80.0)) % 360.0
    wv[rng.random(n) < 1e-4] = -9999.0
    max_wv[rng.random(n) < 1e-4] = -9999.0

    dates = np.datetime_as_string(times, unit="s")  # YYYY-mm-ddTHH:MM:SS
    dates = [f"{d[8:10]}.{d[5:7]}.{d[0:4]} {d[11:]}" for d in dates]
    values = np.stack([p, T, Tpot, Tdew, rh, VPmax, VPact, VPdef, sh, H2OC, rho, wv, max_wv, wd])
    os.makedirs(os.path.dirname(csv_path), exist_ok=True)
    with open(csv_path + ".tmp", "w") as f:
        f.write(",".join(f'"{c}"' for c in COLUMNS) + "\n")
        for date, row in zip(dates, values.T, strict=True):
            f.write(date + "," + ",".join(f"{v:.2f}" for v in row) + "\n")
    os.replace(csv_path + ".tmp", csv_path)


def read_csv(csv_path):
    """The CSV as {column name: values} in the file's order (pd.read_csv's DataFrame here)."""
    with open(csv_path) as f:
        names = [name.strip('"') for name in f.readline().strip().split(",")]
    dates = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=0, dtype=str)
    values = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=range(1, len(names)))
    return {names[0]: dates, **{name: values[:, i] for i, name in enumerate(names[1:])}}


def to_datetime(dates):
    """dd.mm.YYYY HH:MM:SS strings as datetime64 (pd.to_datetime with that format)."""
    return np.array([f"{d[6:10]}-{d[3:5]}-{d[0:2]}T{d[11:]}" for d in dates], "datetime64[s]")


parser = argparse.ArgumentParser()
parser.add_argument("--model", choices=("dense", "lstm"), default="dense")
parser.add_argument("--max-epochs", type=int, default=6)
args = parser.parse_args()

csv_path = os.path.join(DATA_DIR, "jena_climate_2009_2016.csv")
generate_climate_csv(csv_path)

df = read_csv(csv_path)
# Slice [start:stop:step], starting from index 5 take every 6th record.
df = {name: column[5::6] for name, column in df.items()}

date_time = to_datetime(df.pop("Date Time"))

wv = df["wv (m/s)"]
bad_wv = wv == -9999.0
wv[bad_wv] = 0.0

max_wv = df["max. wv (m/s)"]
bad_max_wv = max_wv == -9999.0
max_wv[bad_max_wv] = 0.0

# The above inplace edits are reflected in the DataFrame.
print("wv (m/s) min:", df["wv (m/s)"].min())

wv = df.pop("wv (m/s)")
max_wv = df.pop("max. wv (m/s)")

# Convert to radians.
wd_rad = df.pop("wd (deg)") * np.pi / 180

# Calculate the wind x and y components.
df["Wx"] = wv * np.cos(wd_rad)
df["Wy"] = wv * np.sin(wd_rad)

# Calculate the max wind x and y components.
df["max Wx"] = max_wv * np.cos(wd_rad)
df["max Wy"] = max_wv * np.sin(wd_rad)

timestamp_s = date_time.astype(np.int64).astype(np.float64)

day = 24 * 60 * 60
year = (365.2425) * day

df["Day sin"] = np.sin(timestamp_s * (2 * np.pi / day))
df["Day cos"] = np.cos(timestamp_s * (2 * np.pi / day))
df["Year sin"] = np.sin(timestamp_s * (2 * np.pi / year))
df["Year cos"] = np.cos(timestamp_s * (2 * np.pi / year))

column_indices = {name: i for i, name in enumerate(df)}
values = np.stack(list(df.values()), axis=1)

n = len(values)
train_df = values[0 : int(n * 0.7)]
val_df = values[int(n * 0.7) : int(n * 0.9)]
test_df = values[int(n * 0.9) :]

num_features = values.shape[1]

train_mean = train_df.mean(axis=0)
train_std = train_df.std(axis=0, ddof=1)

train_df = (train_df - train_mean) / train_std
val_df = (val_df - train_mean) / train_std
test_df = (test_df - train_mean) / train_std


class WindowGenerator:
    def __init__(
        self,
        input_width,
        label_width,
        shift,
        train_df=train_df,
        val_df=val_df,
        test_df=test_df,
        label_columns=None,
        columns=tuple(df),
    ):
        # Store the raw data.
        self.train_df = train_df
        self.val_df = val_df
        self.test_df = test_df

        # Work out the label column indices.
        self.label_columns = label_columns
        if label_columns is not None:
            self.label_columns_indices = {name: i for i, name in enumerate(label_columns)}
        self.column_indices = {name: i for i, name in enumerate(columns)}

        # Work out the window parameters.
        self.input_width = input_width
        self.label_width = label_width
        self.shift = shift

        self.total_window_size = input_width + shift

        self.input_slice = slice(0, input_width)
        self.input_indices = np.arange(self.total_window_size)[self.input_slice]

        self.label_start = self.total_window_size - self.label_width
        self.labels_slice = slice(self.label_start, None)
        self.label_indices = np.arange(self.total_window_size)[self.labels_slice]

    def __repr__(self):
        return "\n".join(
            [
                f"Total window size: {self.total_window_size}",
                f"Input indices: {self.input_indices}",
                f"Label indices: {self.label_indices}",
                f"Label column name(s): {self.label_columns}",
            ]
        )


def split_window(self, features):
    inputs = features[:, self.input_slice, :]
    labels = features[:, self.labels_slice, :]
    if self.label_columns is not None:
        labels = tf.stack(
            [labels[:, :, self.column_indices[name]] for name in self.label_columns], axis=-1
        )

    # Slicing doesn't preserve static shape information, so set the shapes
    # manually. This way the `tf.data.Datasets` are easier to inspect.
    inputs.set_shape([None, self.input_width, None])
    labels.set_shape([None, self.label_width, None])

    return inputs, labels


WindowGenerator.split_window = split_window


def make_dataset(self, data):
    data = np.array(data, dtype=np.float32)
    tuned = _truth.TUNED
    ds = tf.keras.utils.timeseries_dataset_from_array(
        data=data,
        targets=None,
        sequence_length=self.total_window_size,
        sequence_stride=1,
        shuffle=not tuned,
        batch_size=None if tuned else 32,
    )

    if tuned:
        # The windows are the same every epoch: made once in order, cached, then shuffled
        # anew each epoch over all of them, batched, split in a parallel map, prefetched.
        ds = ds.cache().shuffle(len(data)).batch(32)
        ds = ds.map(self.split_window, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)
    ds = ds.map(self.split_window)

    return ds


WindowGenerator.make_dataset = make_dataset


@property
def train(self):
    return self.make_dataset(self.train_df)


@property
def val(self):
    return self.make_dataset(self.val_df)


@property
def test(self):
    return self.make_dataset(self.test_df)


WindowGenerator.train = train
WindowGenerator.val = val
WindowGenerator.test = test

MAX_EPOCHS = args.max_epochs


def compile_and_fit(model, window, patience=2):
    early_stopping = tf.keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=patience, mode="min"
    )

    model.compile(
        loss=tf.keras.losses.MeanSquaredError(),
        optimizer=tf.keras.optimizers.Adam(),
        metrics=[tf.keras.metrics.MeanAbsoluteError()],
    )

    history = model.fit(
        _truth.training_dataset(window.train, epochs=MAX_EPOCHS, tuned=lambda: window.train),
        epochs=MAX_EPOCHS,
        validation_data=window.val,
        callbacks=[early_stopping, *_truth.callbacks()],
        verbose=2,
    )
    return history


if args.model == "dense":
    single_step_window = WindowGenerator(
        input_width=1, label_width=1, shift=1, label_columns=["T (degC)"]
    )
    print(single_step_window)

    dense = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(units=64, activation="relu"),
            tf.keras.layers.Dense(units=64, activation="relu"),
            tf.keras.layers.Dense(units=1),
        ]
    )

    history = compile_and_fit(dense, single_step_window)
else:
    wide_window = WindowGenerator(
        input_width=24, label_width=24, shift=1, label_columns=["T (degC)"]
    )
    print(wide_window)

    lstm_model = tf.keras.models.Sequential(
        [
            # Shape [batch, time, features] => [batch, time, lstm_units]
            tf.keras.layers.LSTM(32, return_sequences=True),
            # Shape => [batch, time, features]
            tf.keras.layers.Dense(units=1),
        ]
    )

    history = compile_and_fit(lstm_model, wide_window)
