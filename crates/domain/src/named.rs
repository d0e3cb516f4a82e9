//! The domain's named enums (stage, handoff state, event type, delivery status): each is its
//! documented names (docs/api.md, docs/events.md) and nothing else. One macro gives them all the same derives: serde and strum
//! (the name table: `as_str`, `FromStr`, `Display`, `VARIANTS`), and, with the `diesel` feature,
//! the `text` column mapping of `sql.rs`. The names themselves are the enum's own attributes.

macro_rules! named_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident { $($(#[$vattr:meta])* $variant:ident,)+ }
    ) => {
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            serde::Serialize,
            serde::Deserialize,
            strum::EnumString,
            strum::IntoStaticStr,
            strum::Display,
            strum::VariantArray,
        )]
        #[cfg_attr(
            feature = "diesel",
            derive(diesel::AsExpression, diesel::FromSqlRow),
            diesel(sql_type = diesel::sql_types::Text)
        )]
        $(#[$attr])*
        pub enum $name {
            $($(#[$vattr])* $variant,)+
        }

        impl $name {
            /// The documented name.
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }
    };
}
